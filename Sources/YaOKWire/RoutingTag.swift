import YaOKSupport

/// The 8-byte recipient routing tag of a routed packet (docs/PROTOCOL.md §4.3).
/// Deriving one needs BLAKE2b (RoutingTag+Derive.swift); this file stays pure for the fuzz build.
public struct RoutingTag: Hashable, Sendable, CustomStringConvertible {
    public static let length = 8
    /// Milliseconds in a UTC day: the tag rotates at every UTC midnight.
    public static let dayMs: Int64 = 86_400_000

    public let value: UInt64

    public init(value: UInt64) { self.value = value }

    public init<C: Collection>(bytes: C) throws where C.Element == UInt8 {
        guard bytes.count == Self.length else {
            throw YaOKError(.invalidArgument, "Routing tag must be \(Self.length) bytes, got \(bytes.count)")
        }
        self.value = bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.appendBigEndian(value, count: Self.length)
        return out
    }

    /// The UTC day number (days since 1970-01-01) that a tag for `createdMs` is bound to.
    public static func day(ofMs createdMs: Int64) -> UInt32 {
        UInt32(truncatingIfNeeded: createdMs / dayMs)
    }

    public var description: String { Hex.encode(bytes) }
}
