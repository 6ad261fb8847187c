import YaOKSupport

/// What both sides of an encounter agree on (the id size, fixed by the carried packet
/// format) and what each side chooses for itself (its limits). A decoder never trusts a
/// count it has not compared with these limits, so a message's work is bounded before it
/// is read. Pure Swift (fuzz build).
public struct ReconciliationParameters: Sendable, Equatable {
    /// The size of a packet identity in bytes: 16 or 32.
    public let idLength: Int
    /// The largest message this side sends or accepts, in bytes.
    public let maxMessageBytes: Int
    /// The most ranges this side accepts in one message (each costs a binary search and a
    /// fingerprint, and may be answered by `buckets` ranges).
    public let maxRanges: Int
    /// The most ids this side accepts in one message (all lists together).
    public let maxIDs: Int
    /// How many sub-ranges a range whose fingerprints differ is split into.
    public let buckets: Int
    /// A range holding fewer items than this is answered with its id list instead of
    /// being split; `Int.max` makes the protocol plain id lists (measured in yaok-bench).
    public let idListThreshold: Int
    /// The bytes this side sends and receives in one encounter, reconciliation messages
    /// and have/want lists together; when it is spent the side stops, keeping what it
    /// has learned.
    public let encounterBudget: Int

    public static let allowedIDLengths: Set<Int> = [16, 32]
    /// The smallest message limit: one range of the largest kind, a skip and the tail
    /// fingerprint always fit, so every message makes progress.
    public static let minimumMessageBytes = 256
    /// The defaults (docs/PROTOCOL.md, "Reconciliation"): 8 buckets and id lists below 16
    /// items, chosen from `yaok-bench reconcile` (against 4, 16 and 32 buckets, lists below
    /// 16 to 64, and plain id lists: the fewest bytes for up to 1,000 differences without
    /// more round trips than 16 buckets); messages of at most 16 KiB (a Bluetooth LE link
    /// at a few hundred KB/s sends one in well under 0.1 s, so a short encounter still
    /// completes rounds); 256 KiB per encounter (a second or two of such a link).
    public static func standard(idLength: Int) throws -> ReconciliationParameters {
        try ReconciliationParameters(idLength: idLength, maxMessageBytes: 16 * 1024, maxRanges: 512,
                                     maxIDs: 1024, buckets: 8, idListThreshold: 16,
                                     encounterBudget: 256 * 1024)
    }

    public init(idLength: Int, maxMessageBytes: Int, maxRanges: Int, maxIDs: Int, buckets: Int,
                idListThreshold: Int, encounterBudget: Int) throws {
        guard Self.allowedIDLengths.contains(idLength) else {
            throw YaOKError(.invalidArgument, "Reconciliation id length must be 16 or 32 bytes, got \(idLength)")
        }
        guard maxMessageBytes >= Self.minimumMessageBytes, maxMessageBytes <= 1 << 24 else {
            throw YaOKError(.invalidArgument, "Reconciliation message limit must be \(Self.minimumMessageBytes) bytes to 16 MiB")
        }
        guard maxRanges >= buckets + 2, maxIDs >= 1, (2...256).contains(buckets), idListThreshold >= 1 else {
            throw YaOKError(.invalidArgument, "Reconciliation limits: at least buckets + 2 ranges and 1 id; 2 to 256 buckets")
        }
        guard encounterBudget >= 2 * Self.minimumMessageBytes else {
            throw YaOKError(.invalidArgument, "Reconciliation encounter budget must be at least \(2 * Self.minimumMessageBytes) bytes")
        }
        self.idLength = idLength
        self.maxMessageBytes = maxMessageBytes
        self.maxRanges = maxRanges
        self.maxIDs = maxIDs
        self.buckets = buckets
        self.idListThreshold = idListThreshold
        self.encounterBudget = encounterBudget
    }
}
