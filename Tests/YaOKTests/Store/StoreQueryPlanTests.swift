import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// The query plans of the statements the node runs on its growing tables (issue 20): every
/// one seeks an index, none reads every row of the outbox, the messages or the carry store
/// (rows there sit in front of their packets' overflow pages, so a scan reads the packets
/// too), none sorts them. The statements are taken from what the node actually ran (its
/// statement log) over sends, receipts, acks, timers, the sweep, history and the store's
/// other outbox and carry queries, so that an index dropped or a query changed later turns
/// into a failing plan here, not into a slower node with a large outbox.
@Suite struct StoreQueryPlanTests {
    private static let tables = ["outbox", "messages", "carried_packets"]

    /// Statements that read every row by design: listings of the whole table, and what runs
    /// once (adopting rows written before their MAC existed, the sweep's recount).
    private static let wholeTable: [String] = [
        "FROM outbox ORDER BY seq",                          // the outbox listing (all of it)
        "FROM outbox WHERE kind = ",                         // the same, of one kind
        "SELECT seq, packet_id, kind, contact_id, expires_ms, packet FROM outbox",  // MAC adoption
        "FROM messages\n",                                   // MAC adoption
        "SELECT count(*) FROM carried_packets)",             // the sweep's usage recount
        "EXISTS (SELECT 1 FROM messages WHERE mac IS NOT NULL)",
    ]

    /// Problems in the plan of `sql` on `db`: a scan or an index-less search of one of the
    /// growing tables, or a sort.
    static func problems(_ sql: String, _ db: Database) throws -> [String] {
        let plan = try db.rows("EXPLAIN QUERY PLAN " + sql) { $0.text(3) }
        var found: [String] = []
        for step in plan {
            for table in tables {
                let scan = step.hasPrefix("SCAN \(table)") && (step == "SCAN \(table)" || step.hasPrefix("SCAN \(table) "))
                let search = step == "SEARCH \(table)"  // no index: every row
                if scan || search { found.append(step) }
            }
            if step.hasPrefix("USE TEMP B-TREE"), tables.contains(where: { sql.contains("FROM \($0)") }) { found.append(step) }
        }
        return found
    }

    @Test func theNodesQueriesOnItsGrowingTablesSeekAnIndex() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        for node in [pair.alice, pair.bob] { try node.withDatabase { $0.statementLog = [] } }

        // Sends (with their carried copies), delivery both ways, acks, history, read marks.
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        var ids: [MessageID] = []
        for i in 0..<3 { ids.append(try pair.alice.send(to: pair.bobID, text: "to Bob \(i)").messageID) }
        _ = try pair.bob.send(to: pair.aliceID, text: "to Alice")
        for id in ids { #expect(eventually { (try? pair.alice.status(of: id)) == .delivered }) }
        pipe.close()
        _ = try pair.alice.send(to: pair.bobID, text: "queued")  // waits in the outbox
        _ = try pair.bob.history(pair.aliceID, limit: 2)
        _ = try pair.bob.markRead(pair.aliceID)
        _ = try pair.alice.outgoingMessage(ids[0])
        _ = try pair.alice.outbox()
        // Timers and the sweep, a day later (expiries, relay waits, the carry store).
        clock.advance(seconds: 86_400)
        for node in [pair.alice, pair.bob] { node.runDeliveryTimers() }
        // The store's other outbox and carry queries, as the pumps and the sweep run them.
        try pair.alice.withStore { store, s in
            let now = s.delivery.now
            _ = try store.dueOutboxIDs(contactID: nil, now: now, limit: 10)
            _ = try store.dueOutboxIDs(contactID: nil, excluding: [pair.bobID], now: now, limit: 10)
            _ = try store.dueOutboxIDs(contactID: pair.bobID, now: now, limit: 10)
            _ = try store.nextOutboxAttempt(after: now)
            try store.requeueCarried(now: now)
            try store.requeueCarried(now: now, contactID: pair.bobID)
            try store.makeOutboxDue(contactID: pair.bobID, now: now)
            _ = try store.expiredOutboxIDs(now: now)
            _ = try store.carriedKeys(nowMs: now, limit: 10)
            _ = try store.carriedEntries(nowMs: now, limit: 10)
            _ = try store.carriedCount(nowMs: now)
            _ = try store.deleteExpiredCarried(nowMs: now)
            _ = try store.shrinkCarried(to: CarryPolicy(maxPackets: 1, maxBytes: 1 << 20), nowMs: now)
        }
        try pair.alice.deleteContact(pair.bobID, deleteMessages: true)

        var checked = 0
        for node in [pair.alice, pair.bob] {
            try node.withDatabase { db in
                let log = Set(db.statementLog ?? [])
                db.statementLog = nil
                for sql in log.sorted() where Self.tables.contains(where: { sql.contains(" \($0)") })
                    && !sql.contains(";") && !Self.wholeTable.contains(where: { sql.contains($0) }) {
                    checked += 1
                    let found = try Self.problems(sql, db)
                    #expect(found.isEmpty, "\(sql): \(found)")
                }
            }
        }
        #expect(checked >= 30)
    }

    /// The retry timer's query, which runs after every send, and the sweep's: before
    /// migration 19 the first read every outbox row and the others scanned it too.
    @Test func theTimerAndSweepQueriesSeekTheirIndexes() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try Store(directory: dir.path)
        defer { store.close() }
        store.db.statementLog = []
        _ = try store.nextOutboxAttempt(after: 0)
        try store.requeueCarried(now: 0)
        _ = try store.expiredOutboxIDs(now: 0)
        _ = try store.dueOutboxIDs(contactID: nil, excluding: [1, 2], now: 0, limit: 1)
        let log = store.db.statementLog ?? []
        #expect(log.count == 4)
        let expected = ["outbox_timers", "outbox_timers", "outbox_expiry", "outbox_pump"]
        for (sql, index) in zip(log, expected) {
            let plan = try store.db.rows("EXPLAIN QUERY PLAN " + sql) { $0.text(3) }
            #expect(plan.contains { $0.hasPrefix("SEARCH outbox USING") && $0.contains(index) }, "\(sql): \(plan)")
            #expect(try Self.problems(sql, store.db).isEmpty, "\(sql): \(plan)")
        }
    }
}
