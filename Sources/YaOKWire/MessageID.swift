import YaOKSupport

/// A 128-bit random message identifier, held as two integers so that hashing and comparing
/// it on the relay hot path (duplicate detection) allocates nothing. Pure Swift (fuzz build).
public struct MessageID: Hashable, Sendable, CustomStringConvertible {
    public static let length = 16

    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Throws `invalidArgument` unless `bytes` holds exactly 16 bytes. Inlinable, so that a
    /// caller in another module gets a copy specialised for its collection: the generic one
    /// looked up the metadata of its iterator types at run time on every call (a store
    /// reading a few hundred IDs per pump spent 3 % of a batch's CPU in that lookup).
    @inlinable
    public init<C: Collection>(bytes: C) throws where C.Element == UInt8 {
        guard bytes.count == Self.length else {
            throw YaOKError(.invalidArgument, "Message ID must be \(Self.length) bytes, got \(bytes.count)")
        }
        var h: UInt64 = 0, l: UInt64 = 0
        var i = 0
        for b in bytes {
            if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
            i += 1
        }
        self.init(high: h, low: l)
    }

    /// A fresh ID from the system CSPRNG (getrandom(2) on Linux). 128 random bits make a
    /// collision between honest messages negligible, and the ID says nothing about the sender.
    public static func random() -> MessageID {
        var rng = SystemRandomNumberGenerator()
        return MessageID(high: rng.next(), low: rng.next())
    }

    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.length)
        out.appendBigEndian(high, count: 8)
        out.appendBigEndian(low, count: 8)
        return out
    }

    public var description: String { Hex.encode(bytes) }
}
