import YaOKWire

/// Where a relay keeps its packets, revocations and counters (docs/PROTOCOL.md §8.5).
/// Two implementations: `SQLiteRelayStore` (embedded, one relay process) and
/// `PostgresRelayStore` (several relay processes over one database, docs/RELAY.md).
/// Not thread-safe: the relay calls it from its disk thread only (and `stop`).
public protocol RelayStore: AnyObject {
    /// Applies `writes` all in one transaction (group commit: one disk sync for the lot),
    /// decided in `RelayCommitOrder` (DELETEs first, then the POSTs by mailbox, each
    /// mailbox's in order), and returns one outcome per write, in the writes' order. Throws
    /// if the transaction failed, in which case nothing was written.
    func commit(_ writes: [RelayStoreWrite], nowMs: Int64, quota: MailboxQuota) throws -> [RelayStoreOutcome]

    /// Unexpired packets of each mailbox after its cursor, oldest first, within the budget.
    /// Mailboxes are served in order; one the budget did not reach comes back not complete.
    func packets(_ requests: [RelayPageRequest], maxPackets: Int, maxBytes: Int, nowMs: Int64) throws -> [RelayPage]

    /// Several reads at once, each with its own budget, as `packets` would serve them one
    /// by one (a store may return a mailbox's page shorter and not complete, to be read on
    /// after it). PostgreSQL serves them in one round trip.
    func packets(reads: [[RelayPageRequest]], maxPackets: Int, maxBytes: Int, nowMs: Int64) throws -> [[RelayPage]]

    /// Deletes expired packets; returns how many, and their bytes.
    @discardableResult
    func deleteExpired(nowMs: Int64) throws -> (packets: Int, bytes: Int)

    /// Bytes of the packets stored (expired ones too until they are swept): the sum of
    /// the mailboxes' byte totals. Read once, when the relay starts (it may scan); the
    /// relay then keeps the total itself from the outcomes of its writes and sweeps.
    func storedBytes() throws -> Int

    /// Records the revocation and deletes the packets the pseudonym posted (by its
    /// `PosterTag`).
    func revoke(pseudonym: [UInt8], nowMs: Int64) throws
    func revokedPseudonyms() throws -> Set<[UInt8]>
    /// The relay's identifier (§8.2): made at random the first time, then the same for every
    /// relay process over this store (RelayStore+Identifier.swift).
    func relayIdentifier() throws -> [UInt8]

    /// The counters the running relay last saved.
    func loadCounters() throws -> RelayCounters
    func saveCounters(_ counters: RelayCounters, nowMs: Int64) throws

    /// Unexpired packets stored.
    func storedPacketCount(nowMs: Int64) throws -> Int

    func close()

    /// Whether other relay processes write to this store too. Then a packet stored here may
    /// commit after one stored elsewhere with a lower sequence number is pushed, so the relay
    /// delivers through a store read (after the session's cursor) rather than push what it
    /// just stored, and checks rate limits in the store (`RelayPost.charge`).
    var isShared: Bool { get }

    /// Starts telling `onChange`, on a thread of the store's, about mailboxes that other
    /// processes stored into (live push across relays). nil when there are no others.
    func watch(_ onChange: @escaping @Sendable (RelayStoreChange) -> Void) throws -> RelayStoreWatch?

    /// The database server's state, for stats and diagnostics (nil: embedded, no server).
    var health: RelayStoreHealth? { get }

    /// Housekeeping of the store's own log that the disk thread runs after it has handed a
    /// round's results back rather than inside a commit (SQLite: the WAL checkpoint).
    func checkpointIfDue() throws
}

extension RelayStore {
    public func packets(reads: [[RelayPageRequest]], maxPackets: Int, maxBytes: Int, nowMs: Int64) throws -> [[RelayPage]] {
        try reads.map { try packets($0, maxPackets: maxPackets, maxBytes: maxBytes, nowMs: nowMs) }
    }

    /// Nothing to do on a store without a write-ahead log of its own.
    public func checkpointIfDue() throws {}

    public var isShared: Bool { false }
    public func watch(_ onChange: @escaping @Sendable (RelayStoreChange) -> Void) throws -> RelayStoreWatch? { nil }
    public var health: RelayStoreHealth? { nil }
}

/// What another relay process did to the shared store.
public enum RelayStoreChange: Sendable, Equatable {
    /// Packets were stored into these mailboxes.
    case stored([MailboxID])
    /// Notifications may have been missed (the watch reconnected): read every mailbox again.
    case resync
    /// The revocation list changed.
    case revoked
}

/// A running watch; `stop` ends it (idempotent).
public protocol RelayStoreWatch: AnyObject, Sendable {
    func stop()
}

/// The shared database as the relay last saw it.
public struct RelayStoreHealth: Sendable, Equatable {
    public var reachable: Bool
    public var lastError: String
    public var outages: Int64
    public var reconnects: Int64
    public var description: String
    public init(reachable: Bool, lastError: String, outages: Int64, reconnects: Int64, description: String) {
        self.reachable = reachable
        self.lastError = lastError
        self.outages = outages
        self.reconnects = reconnects
        self.description = description
    }
}

/// A POST's claim on its sender's rate limit (§8.3), for a store that relays share: it
/// counts the sender's posts over the last hour across every relay, so the limit holds
/// for the cluster and not only per process.
public struct RelayRateCharge: Sendable, Equatable {
    public let pseudonym: [UInt8]
    public let isAck: Bool
    public let limit: Int
    public init(pseudonym: [UInt8], isAck: Bool, limit: Int) {
        self.pseudonym = pseudonym
        self.isAck = isAck
        self.limit = limit
    }
}

/// Per-mailbox limits, and the stored-byte quotas of a poster's IPv4 address and its /24
/// (§8.5; `HolderTag`; `.max`: none).
public struct MailboxQuota: Sendable, Equatable {
    public var packets: Int
    public var bytes: Int
    public var addressBytes: Int
    public var prefixBytes: Int
    public init(packets: Int, bytes: Int, addressBytes: Int = .max, prefixBytes: Int = .max) {
        self.packets = packets
        self.bytes = bytes
        self.addressBytes = addressBytes
        self.prefixBytes = prefixBytes
    }
}

/// A packet the relay was asked to store, already checked (header parsed, time valid).
public struct RelayPost: Sendable, Equatable {
    public let mailbox: MailboxID
    public let messageID: MessageID
    public let expiresAtMs: Int64
    public let packet: [UInt8]
    /// Checked and recorded by a shared store (nil: the relay's own limiter did it).
    public var charge: RelayRateCharge?
    /// The poster's pseudonym: the store keeps only its `PosterTag`, so that a revocation
    /// can delete what the pseudonym stored (nil: not known, never purged).
    public var poster: [UInt8]?
    /// The poster's IPv4 address (four bytes, network order): the store keeps only its
    /// `HolderTag`s and counts the packet against the address's and the /24's stored-byte
    /// quotas (nil: not known, not counted).
    public var address: [UInt8]?

    public init(mailbox: MailboxID, messageID: MessageID, expiresAtMs: Int64, packet: [UInt8], charge: RelayRateCharge? = nil) {
        self.mailbox = mailbox
        self.messageID = messageID
        self.expiresAtMs = expiresAtMs
        self.packet = packet
        self.charge = charge
    }
}

public enum RelayStoreWrite: Sendable, Equatable {
    case post(RelayPost)
    case delete([StoredPacketRef])
}

public enum RelayStoreOutcome: Sendable, Equatable {
    /// Newly stored under this sequence number (increasing, never reused).
    case stored(sequence: Int64)
    /// Already stored under the same (mailbox, message ID): nothing written.
    case duplicate
    case mailboxFull
    /// The poster's IPv4 address (or, `prefix`, its /24) holds its quota of stored bytes.
    case overQuota(prefix: Bool)
    /// Over the sender's cluster-wide rate limit (a shared store only): a slot frees in
    /// this many seconds.
    case rateLimited(retryAfterSeconds: Int)
    /// Packets deleted, and their bytes.
    case deleted(count: Int, bytes: Int)
}

/// One mailbox's read: packets with a sequence number above `after`.
public struct RelayPageRequest: Sendable, Equatable {
    public let mailbox: MailboxID
    public let after: Int64
    public init(mailbox: MailboxID, after: Int64) {
        self.mailbox = mailbox
        self.after = after
    }
}

public struct StoredRelayPacket: Sendable, Equatable {
    public let sequence: Int64
    public let packet: [UInt8]
    public init(sequence: Int64, packet: [UInt8]) {
        self.sequence = sequence
        self.packet = packet
    }
}

public struct RelayPage: Sendable, Equatable {
    public let mailbox: MailboxID
    public let packets: [StoredRelayPacket]
    /// Whether this is everything there was (false: read again after the last one).
    public let complete: Bool
    public init(mailbox: MailboxID, packets: [StoredRelayPacket], complete: Bool) {
        self.mailbox = mailbox
        self.packets = packets
        self.complete = complete
    }
}

/// A pseudonym and its posts within the last hour.
public struct RelayTopPoster: Sendable, Equatable {
    public let pseudonym: [UInt8]
    public let posts: Int64
    public init(pseudonym: [UInt8], posts: Int64) {
        self.pseudonym = pseudonym
        self.posts = posts
    }
}

/// What `yaok-relay stats` shows. Totals survive restarts (the relay saves them about
/// every second and starts from the saved values); `connected` is the live figure.
public struct RelayCounters: Sendable, Equatable {
    public var connected: Int64 = 0
    /// Packets newly stored (ACCEPTED, not counting idempotent re-posts).
    public var accepted: Int64 = 0
    /// DELIVER frames sent.
    public var delivered: Int64 = 0
    /// Packets deleted by their recipients.
    public var deleted: Int64 = 0
    /// POSTs refused (malformed, expired, mailbox full) and sessions ended for a bad
    /// frame or signature.
    public var rejected: Int64 = 0
    public var rateLimited: Int64 = 0
    /// POSTs refused because the poster's IPv4 address or /24 holds its quota of stored
    /// bytes (ERROR unavailable).
    public var quotaRefused: Int64 = 0
    /// Sessions ended or logins refused because the pseudonym is revoked.
    public var revokedSessions: Int64 = 0
    /// Commits and reads that failed (the database away, the disk full): their POSTs got
    /// ERROR unavailable, their reads were retried.
    public var storageErrors: Int64 = 0
    /// Times the shared database went away (PostgreSQL; 0 for SQLite).
    public var databaseOutages: Int64 = 0
    /// The caps in force (live: the running relay's, after clamping to its open-files
    /// limit), connections closed to make room for newcomers (a total), and DELETE refs
    /// waiting to be tried again because the store did not take them (live).
    public var capConnections: Int64 = 0
    public var capPerAddress: Int64 = 0
    public var capPerPrefix: Int64 = 0
    public var descriptorLimit: Int64 = 0
    public var evicted: Int64 = 0
    public var retainedDeletes: Int64 = 0
    /// DELETE refs parked on their connections (live): over the per-connection or
    /// per-address DELETE budget, waiting their turn (`RelayServer+DeleteBudget`).
    public var parkedDeletes: Int64 = 0
    /// DELETE refs dropped from the retry list past its cap (a total): those packets are
    /// delivered again in a later session.
    public var forgottenDeletes: Int64 = 0
    /// The relay as a carrier (§12.9), totals: carried packets taken from depositors, copies
    /// handed to their recipients (answered `taken`), packets deleted by a verified claim.
    public var carryTaken: Int64 = 0
    public var carryHanded: Int64 = 0
    public var carryPurged: Int64 = 0
    /// The pseudonyms with the most posts in the last hour (at most 100), most first:
    /// saved with the counters, for `yaok-relay stats --top`.
    public var topPosters: [RelayTopPoster] = []

    public init() {}

    static let names = ["connected", "accepted", "delivered", "deleted", "rejected", "rate_limited", "revoked_sessions",
                        "storage_errors", "database_outages", "cap_connections", "cap_per_address", "cap_per_prefix",
                        "descriptor_limit", "evicted", "retained_deletes", "forgotten_deletes", "quota_refused",
                        "carry_taken", "carry_handed", "carry_purged", "parked_deletes"]

    /// The figures that describe the running relay now, not totals: a stopped relay's are
    /// not shown, and a cluster adds up only the running relays'.
    static let liveNames: Set<String> = ["connected", "cap_connections", "cap_per_address", "cap_per_prefix",
                                         "descriptor_limit", "retained_deletes", "parked_deletes"]

    var values: [Int64] {
        [connected, accepted, delivered, deleted, rejected, rateLimited, revokedSessions, storageErrors, databaseOutages,
         capConnections, capPerAddress, capPerPrefix, descriptorLimit, evicted, retainedDeletes, forgottenDeletes, quotaRefused,
         carryTaken, carryHanded, carryPurged, parkedDeletes]
    }

    mutating func set(_ name: String, _ value: Int64) {
        switch name {
        case "connected": connected = value
        case "accepted": accepted = value
        case "delivered": delivered = value
        case "deleted": deleted = value
        case "rejected": rejected = value
        case "rate_limited": rateLimited = value
        case "revoked_sessions": revokedSessions = value
        case "storage_errors": storageErrors = value
        case "database_outages": databaseOutages = value
        case "cap_connections": capConnections = value
        case "cap_per_address": capPerAddress = value
        case "cap_per_prefix": capPerPrefix = value
        case "descriptor_limit": descriptorLimit = value
        case "evicted": evicted = value
        case "retained_deletes": retainedDeletes = value
        case "forgotten_deletes": forgottenDeletes = value
        case "quota_refused": quotaRefused = value
        case "carry_taken": carryTaken = value
        case "carry_handed": carryHanded = value
        case "carry_purged": carryPurged = value
        case "parked_deletes": parkedDeletes = value
        default: break
        }
    }
}
