/// The messages of an encounter's reconciliation (docs/PROTOCOL.md, "Reconciliation"):
/// range messages, alternating between the two sides until the initiator knows every
/// difference, and have/want lists, by which the initiator tells the responder what it
/// learned. Pure Swift (fuzz build).
public enum ReconciliationMessage: Equatable, Sendable {
    /// Ranges covering the whole order, ascending, the last ending at infinity; none means
    /// "nothing left to settle".
    case ranges([ReconciliationRange])
    /// `have`: ids the sender holds and the receiver lacks (the sender will send them);
    /// `want`: ids the receiver holds and the sender lacks (the receiver should send them).
    /// Each list ascending (bytewise), no id in both.
    case haveWant(have: [[UInt8]], want: [[UInt8]])

    public static let version: UInt8 = 1
    public static let fingerprintLength = 16
}

/// A range from the previous range's upper bound (or `ReconciliationBound.zero`) to its own.
public struct ReconciliationRange: Equatable, Sendable {
    public enum Payload: Equatable, Sendable {
        /// Settled: nothing more to do here.
        case skip
        /// The sender's fingerprint of its items in the range.
        case fingerprint([UInt8])
        /// Every id the sender holds in the range, ascending (bytewise).
        case idList([[UInt8]])
        /// The responder's answer to an id list, when it fits: the ids it holds in the
        /// range that the list lacked (`extra`), and the listed ids it lacks (`missing`),
        /// each ascending, no id in both. Settles the range for both sides at a cost that
        /// follows the difference, where an id list back would cost the range's size.
        case difference(extra: [[UInt8]], missing: [[UInt8]])
    }

    public let upper: ReconciliationBound
    public let payload: Payload

    public init(upper: ReconciliationBound, payload: Payload) {
        self.upper = upper
        self.payload = payload
    }
}

extension ReconciliationRange {
    /// The ids the range carries (they count against `maxIDs`).
    var idCount: Int {
        switch payload {
        case .skip, .fingerprint: 0
        case .idList(let ids): ids.count
        case .difference(let extra, let missing): extra.count + missing.count
        }
    }
}
