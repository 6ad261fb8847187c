import YaOKSupport

/// Whose packets a node carries (docs/PROTOCOL.md §12): the user's choice, in the settings
/// of a phone that meets strangers all day.
public enum CarryMode: String, Sendable, Equatable, CaseIterable {
    /// Take and hand on carried packets on every link, strangers' included: the default,
    /// since carrying through strangers is how a message crosses a shutdown.
    case anyone
    /// Only on links whose peer is a contact.
    case contactsOnly = "contacts"
    /// Not at all: no carried packet is taken, handed on or made; what the store held is
    /// deleted (`Store.deleteAllCarried`), so the files no longer show it.
    case off

    /// The mode named as the CLI, the C header and diagnostics name it: "anyone",
    /// "contacts", "off"; nil for anything else.
    public init?(name: String) { self.init(rawValue: name) }
    public var name: String { rawValue }
}

/// The caps of the carry store a user may change (the rest of `CarryPolicy` is fixed).
public struct CarryLimits: Sendable, Equatable {
    /// The most packets kept for others (2,000 by default, docs/PROTOCOL.md §10.9).
    public var maxPackets: Int
    /// The most bytes kept for others (32 MiB by default).
    public var maxBytes: Int

    public init(maxPackets: Int = 2_000, maxBytes: Int = 32 << 20) {
        self.maxPackets = maxPackets
        self.maxBytes = maxBytes
    }

    public static let standard = CarryLimits()

    /// The largest caps accepted: a million packets (the store's indexes and a meeting's
    /// reconciliation stay fast well past that) and 64 GiB.
    public static let maxPacketsLimit = 1_000_000
    public static let maxBytesLimit = 64 << 30

    /// `invalidArgument` for a cap over the limits above (the lower bounds are the store's:
    /// `CarryPolicy.validate`).
    func validateUpperBounds() throws {
        guard maxPackets <= Self.maxPacketsLimit else {
            throw YaOKError(.invalidArgument, "The carry store holds at most \(Self.maxPacketsLimit) packets, not \(maxPackets)")
        }
        guard maxBytes <= Self.maxBytesLimit else {
            throw YaOKError(.invalidArgument, "The carry store holds at most \(Self.maxBytesLimit) bytes (64 GiB), not \(maxBytes)")
        }
    }
}
