import YaOKSupport

/// One carried packet as reconciliation sees it (docs/PROTOCOL.md, "Reconciliation"): its
/// expiry and its identity, an opaque fixed-size byte string (a hash of the packet's
/// immutable bytes; the carried packet format fixes its size). Items are ordered by
/// (expiry, id), as negentropy orders by (timestamp, id): packets made at about the same
/// time expire at about the same time, so what two stores share, and what they do not,
/// sits in clusters of the order, and range fingerprints settle whole clusters at once.
/// Pure Swift (fuzz build).
public struct ReconciliationItem: Hashable, Comparable, Sendable {
    /// Any unit the carried packet format chooses; `UInt64.max` is reserved (the end of
    /// the order, "infinity") and refused.
    public let expiry: UInt64
    public let id: [UInt8]

    /// Throws `invalidArgument` for an expiry of `UInt64.max` or an id of a length other
    /// than `idLength`.
    public init(expiry: UInt64, id: [UInt8], idLength: Int) throws {
        guard expiry < UInt64.max else {
            throw YaOKError(.invalidArgument, "Reconciliation item expiry \(expiry) is reserved")
        }
        guard id.count == idLength else {
            throw YaOKError(.invalidArgument, "Reconciliation item id must be \(idLength) bytes, got \(id.count)")
        }
        self.expiry = expiry
        self.id = id
    }

    public static func < (a: ReconciliationItem, b: ReconciliationItem) -> Bool {
        a.expiry != b.expiry ? a.expiry < b.expiry : a.id.lexicographicallyPrecedes(b.id)
    }
}
