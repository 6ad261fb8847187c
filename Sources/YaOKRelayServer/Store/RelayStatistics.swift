import YaOKSupport

/// What `yaok-relay stats` prints, read from the data directory while the relay runs
/// (it saves its counters about every second) or after it has stopped.
public struct RelayStatistics: Sendable, Equatable {
    public var counters: RelayCounters
    /// Unexpired packets stored now.
    public var storedPackets: Int
    /// Pseudonyms revoked.
    public var revokedPseudonyms: Int
    /// When the relay last saved its counters (ms since the epoch; 0: never).
    public var savedAtMs: Int64
    /// PostgreSQL only: relay processes that saved their counters within 5 s, and the
    /// database (its version and pool, or why it cannot be reached).
    public var runningRelays: Int?
    public var database: String?

    /// Reads them; `notFound` if the directory holds no relay database.
    public static func read(directory: String) throws -> RelayStatistics {
        guard SQLiteRelayStore.exists(in: directory) else {
            throw YaOKError(.notFound, "No relay data in \(directory)")
        }
        let store = try SQLiteRelayStore(directory: directory, posting: false)
        defer { store.close() }
        let now = Clock.milliseconds()
        return RelayStatistics(counters: try store.loadCounters(), storedPackets: try store.storedPacketCount(nowMs: now),
                               revokedPseudonyms: try store.revokedCount(), savedAtMs: try store.countersSavedAtMs())
    }

    /// The cluster's statistics from a shared PostgreSQL store: every relay's counters
    /// added up (`connected` over the running ones). `relayUnavailable` if the database
    /// cannot be reached: that is the report.
    public static func read(postgres conninfo: String) throws -> RelayStatistics {
        let store = try PostgresRelayStore(conninfo: conninfo, poolSize: 1, migrate: false)
        defer { store.close() }
        let now = Clock.milliseconds()
        let cluster = try store.clusterCounters(nowMs: now)
        return RelayStatistics(counters: cluster.counters, storedPackets: try store.storedPacketCount(nowMs: now),
                               revokedPseudonyms: try store.revokedCount(), savedAtMs: cluster.savedAtMs,
                               runningRelays: cluster.running, database: store.serverDescription)
    }

    public init(counters: RelayCounters, storedPackets: Int, revokedPseudonyms: Int, savedAtMs: Int64,
                runningRelays: Int? = nil, database: String? = nil) {
        self.counters = counters
        self.storedPackets = storedPackets
        self.revokedPseudonyms = revokedPseudonyms
        self.savedAtMs = savedAtMs
        self.runningRelays = runningRelays
        self.database = database
    }

    /// Whether the counters look current (saved within the last few seconds): if not, the
    /// relay is probably not running and `connected` is stale.
    public func isCurrent(nowMs: Int64 = Clock.milliseconds()) -> Bool { nowMs - savedAtMs < 5000 }

    public var json: JSON { json(top: 0) }

    /// The JSON, with the `top` pseudonyms by posts in the last hour when `top` > 0.
    public func json(top: Int) -> JSON {
        var fields: [(String, JSON)] = [
            ("connected", .int(isCurrent() ? counters.connected : 0)),
            ("stored", .int(Int64(storedPackets))),
            ("accepted", .int(counters.accepted)),
            ("delivered", .int(counters.delivered)),
            ("deleted", .int(counters.deleted)),
            ("rejected", .int(counters.rejected)),
            ("rate_limited", .int(counters.rateLimited)),
            ("quota_refused", .int(counters.quotaRefused)),
            ("revoked", .int(Int64(revokedPseudonyms))),
            ("revoked_sessions", .int(counters.revokedSessions)),
            ("running", .bool(isCurrent())),
            ("saved_at_ms", .int(savedAtMs)),
            ("storage_errors", .int(counters.storageErrors)),
            ("database_outages", .int(counters.databaseOutages)),
            ("evicted", .int(counters.evicted)),
            ("forgotten_deletes", .int(counters.forgottenDeletes)),
            ("carry_taken", .int(counters.carryTaken)),
            ("carry_handed", .int(counters.carryHanded)),
            ("carry_purged", .int(counters.carryPurged)),
        ]
        if isCurrent() {
            fields += [
                ("cap_connections", .int(counters.capConnections)),
                ("cap_per_address", .int(counters.capPerAddress)),
                ("cap_per_prefix", .int(counters.capPerPrefix)),
                ("descriptor_limit", .int(counters.descriptorLimit)),
                ("retained_deletes", .int(counters.retainedDeletes)),
                ("parked_deletes", .int(counters.parkedDeletes)),
            ]
        }
        if let runningRelays { fields.append(("running_relays", .int(Int64(runningRelays)))) }
        if let database { fields.append(("database", .string(database))) }
        if top > 0 {
            fields.append(("top", .array(counters.topPosters.prefix(top).map {
                .object([("pseudonym", .string(Hex.encode($0.pseudonym))), ("posts", .int($0.posts))])
            })))
        }
        return .object(fields)
    }

    /// The `n` pseudonyms with the most posts in the last hour, one a line.
    public func topText(_ n: Int) -> String {
        let top = counters.topPosters.prefix(n)
        guard !top.isEmpty else { return "top posters, last hour: none" }
        return (["top posters, last hour (pseudonym, posts):"] + top.map { "\(Hex.encode($0.pseudonym))  \($0.posts)" })
            .joined(separator: "\n")
    }

    public var text: String {
        let running = isCurrent()
        return """
            connected clients: \(running ? counters.connected : 0)\(running ? "" : " (the relay is not running)")
            stored envelopes:  \(storedPackets)
            accepted:          \(counters.accepted)
            delivered:         \(counters.delivered)
            deleted:           \(counters.deleted)
            rejected:          \(counters.rejected)
            rate-limited:      \(counters.rateLimited)
            over quota:        \(counters.quotaRefused) POST(s) refused: their IPv4 address or /24 held its share of the storage
            revoked:           \(revokedPseudonyms) pseudonym(s), \(counters.revokedSessions) session(s) ended or refused
            storage errors:    \(counters.storageErrors)
            evicted:           \(counters.evicted) connection(s) closed to make room for a newcomer
            forgotten deletes: \(counters.forgottenDeletes) DELETE ref(s) dropped past the retry list's cap
            carried:           \(counters.carryTaken) packet(s) taken, \(counters.carryHanded) handed to their recipients, \(counters.carryPurged) deleted by a claim
            """ + (running ? """

            caps in force:     \(counters.capConnections) connections (open-files limit \(counters.descriptorLimit)), \(counters.capPerAddress) per IPv4 address, \(counters.capPerPrefix) per /24
            deletes to retry:  \(counters.retainedDeletes) (the store has not taken them yet)
            deletes parked:    \(counters.parkedDeletes) DELETE ref(s) over their connection's or address's budget, waiting their turn
            """ : "") + (database.map { "\ndatabase:          \($0), \(counters.databaseOutages) outage(s) seen by the relays" } ?? "")
            + (runningRelays.map { "\nrelays running:    \($0)" } ?? "")
    }
}
