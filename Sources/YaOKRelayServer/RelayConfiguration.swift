import YaOKWire

/// How a relay runs: its limits and timeouts (docs/PROTOCOL.md §8.3, §8.5). The defaults
/// are the protocol's; tests shorten the timeouts.
public struct RelayConfiguration: Sendable {
    /// Messages per pseudonym per rolling hour; acks get `ackRateMultiplier` times as many.
    public var ratePerHour: Int = 100
    public var ackRateMultiplier: Int = 10
    /// POSTs from one IPv4 address per rolling hour, summed over its pseudonyms: this many
    /// times the per-pseudonym limits (messages and acks each).
    public var addressRateMultiplier: Int = 10
    /// Bytes of packets one IPv4 address may post per rolling hour, summed over its
    /// pseudonyms (the count limits allow about 59 MB; this binds first).
    public var addressBytesPerHour: Int = 32 << 20
    /// The same for all addresses of one /24 together.
    public var prefixBytesPerHour: Int = 128 << 20
    /// All packets stored, in bytes: past this, POSTs get ERROR unavailable ("storage is
    /// full") until DELETEs or expiry free room. DELETEs still work.
    public var maxStoredBytes: Int = 8 << 30
    /// Bytes of stored packets one IPv4 address may hold, summed over its pseudonyms and
    /// the mailboxes it posted to, until DELETEs, expiry or a revocation free them: past
    /// it, its POSTs get ERROR unavailable. Counted in the store (keyed hashes of the
    /// address, `HolderTag`), so it holds across restarts and a cluster. nil: a 32nd of
    /// `maxStoredBytes` (256 MiB of the default 8 GiB). See `storedQuotas` for the clamp.
    public var addressStoredBytes: Int?
    /// The same for all addresses of one /24 together. nil: an 8th of `maxStoredBytes`
    /// (1 GiB of the default 8 GiB).
    public var prefixStoredBytes: Int?
    /// Free space the file system of `dataDirectory` must keep (checked at most once a
    /// second): below it, POSTs get ERROR unavailable as above.
    public var minFreeDiskBytes: Int = 512 << 20
    /// The directory whose file system's free space is checked (nil: not checked).
    public var dataDirectory: String?
    /// Packets and bytes one mailbox may hold.
    public var mailboxQuotaPackets: Int = 1000
    public var mailboxQuotaBytes: Int = 16 << 20
    /// A session's lifetime, then ERROR sessionExpired.
    public var sessionLifetimeSeconds: Double = 3600
    /// TLS and AUTH must be done within this, from accept.
    public var handshakeTimeoutSeconds: Double = 10
    /// A connection on which nothing arrives for this long is closed.
    public var idleTimeoutSeconds: Double = 120
    /// Connections in all. Clamped at start to the open-files limit (raised to its hard
    /// limit) less `descriptorReserve`. When full, a newcomer takes the slot of a
    /// connection of the /24, then the address, that holds the most, if it holds more
    /// than the newcomer's (`RelayServer+Slots`); otherwise it is closed at accept.
    public var maxConnections: Int = 10_000
    /// Connections from one IPv4 address beyond this are closed at accept.
    public var maxConnectionsPerAddress: Int = 64
    /// Connections from one /24 beyond this are closed at accept.
    public var maxConnectionsPerPrefix: Int = 256
    /// Descriptors kept out of `maxConnections`'s clamp: the store, the listener, the
    /// reserve descriptor, PostgreSQL's pool and LISTEN connection, logs.
    public var descriptorReserve: Int = 64
    /// A READY session that has neither subscribed (a mailbox added) nor posted within
    /// this ends with ERROR unavailable: logging in alone holds no slot.
    public var activityGraceSeconds: Double = 30
    /// Connections from one IPv4 address not yet READY (TLS or AUTH under way) beyond this
    /// are closed at accept: a few addresses cannot hold every slot with connections that
    /// never log in.
    public var maxPendingPerAddress: Int = 32
    /// Mailboxes one session may subscribe to.
    public var maxSubscriptions: Int = 4096
    /// Subscriptions of all sessions from one IPv4 address, and of all sessions: a
    /// SUBSCRIBE past either ends its session with ERROR notSubscribed.
    public var maxSubscriptionsPerAddress: Int = 16_384
    /// Of all sessions from one /24. At `maxTotalSubscriptions`, a SUBSCRIBE from another
    /// /24 that would hold fewer closes sessions of the /24 holding the most.
    public var maxSubscriptionsPerPrefix: Int = 65_536
    public var maxTotalSubscriptions: Int = 1_000_000
    /// SUBSCRIBE signatures checked on the loop thread, all connections together, per
    /// `verificationWindowSeconds`: past it, connections whose last read checked
    /// signatures are not read until the next window, so a SUBSCRIBE flood cannot hold up
    /// other clients' frames (about 6,400 a second; an honest client needs a few hundred).
    public var verificationsPerWindow: Int = 32
    public var verificationWindowSeconds: Double = 0.005
    /// Longest lifetime a posted packet may claim (7 days).
    public var maxPacketLifetimeMinutes: Int = 7 * 24 * 60
    /// A connection whose unsent output exceeds this gets no more DELIVER pushes (its
    /// mailboxes are read again from the store once it drains) and is not read from.
    public var writeQueueHighWater: Int = 1 << 20
    /// Below this, backlog pages are read for it again.
    public var writeQueueLowWater: Int = 256 << 10
    /// Past this (only reachable by a client that posts and never reads) it is closed.
    public var writeQueueHardLimit: Int = 4 << 20
    /// POSTs of one connection waiting for the disk: beyond this it is not read from.
    public var maxPendingPostsPerConnection: Int = 256
    /// DELETE refs of one connection waiting for the disk: from this many it is not read
    /// from until the disk round returns; nor is any connection with refs waiting while
    /// `maxPendingDeleteRefs` wait in all.
    public var maxPendingDeleteRefsPerConnection: Int = 4096
    public var maxPendingDeleteRefs: Int = 65_536
    /// DELETE refs one session may send per second (a burst of `deleteRefsBurst`): past it
    /// the connection is not read from until its budget is positive again, so a flood of
    /// DELETEs cannot take the disk from other clients' POSTs (one read, 16 KiB, may go
    /// past it). An honest client deletes what it was delivered: a full backlog page
    /// is 64 packets.
    public var deleteRefsPerSecond: Double = 1_024
    public var deleteRefsBurst: Double = 4_096
    /// The same for all sessions of one client address together, so many sessions from
    /// one address cannot multiply it.
    public var deleteRefsPerSecondPerAddress: Double = 4_096
    public var deleteRefsBurstPerAddress: Double = 16_384
    /// DELETE refs the store failed to take (the database away), kept in memory and tried
    /// again every `deleteRetrySeconds` until it takes them; past this many (about 3 MiB)
    /// the oldest are forgotten, and those packets come again in a later session.
    public var maxRetainedDeleteRefs: Int = 65_536
    public var deleteRetrySeconds: Double = 1
    /// One backlog read: at most this many packets and bytes.
    public var backlogPagePackets: Int = 64
    public var backlogPageBytes: Int = 256 << 10
    /// How often timeouts are checked.
    public var tickSeconds: Double = 0.25
    /// How often the disk thread saves counters and polls revocations.
    public var maintenanceSeconds: Double = 1
    /// How often expired packets are deleted.
    public var sweepSeconds: Double = 10
    /// A closing connection gets this long to flush its last ERROR.
    public var closeGraceSeconds: Double = 1

    /// Pseudonyms with the most posts in the last hour, kept for `yaok-relay stats --top`.
    public var topPostersKept: Int = 100
    /// When set, one line per session: when it is READY and when it ends (--log-sessions).
    public var sessionLog: (@Sendable (String) -> Void)?
    /// The carry store's bounds (docs/RELAY.md, "Carrying"): packets and bytes held, and
    /// what one client IPv4 address may deposit per clock hour.
    public var carryMaxPackets: Int = 50_000
    public var carryMaxBytes: Int = 512 << 20
    public var carryPacketsPerHour: Int = 500
    public var carryBytesPerHour: Int = 8 << 20
    /// Bytes of carried packets handed to one client IPv4 address per clock hour, over all
    /// its sessions (sessions are cheap: without it an address could pull the store again
    /// and again, 4 MiB a session).
    public var carryHandedBytesPerHour: Int = 32 << 20
    /// CARRY frames of one connection handed to the carry thread and not answered yet: at
    /// this many the connection is not read until answers come back (backpressure).
    public var maxPendingCarryPerConnection: Int = 64
    /// For tests: answer CARRY as a relay of an earlier version does (an unknown frame type:
    /// ERROR malformed, the session ends), to check that clients fall back (§12.9).
    public var refusesCarryAsUnknownForTesting = false

    public init() {}

    /// The stored-byte quotas in force: the /24's at most `maxStoredBytes`, the address's
    /// at most the /24's, and each at least one packet of the largest size (17,408 bytes),
    /// so that something can always be posted.
    public var storedQuotas: (address: Int, prefix: Int) {
        let total = max(maxStoredBytes, Wire.maxPacketLength)
        let prefix = min(max(prefixStoredBytes ?? total / 8, Wire.maxPacketLength), total)
        let address = min(max(addressStoredBytes ?? total / 32, Wire.maxPacketLength), prefix)
        return (address, prefix)
    }

    /// The ack limit per hour.
    public var ackRatePerHour: Int { ratePerHour * ackRateMultiplier }
}
