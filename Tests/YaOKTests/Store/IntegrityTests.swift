import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Someone who can write the database file but has no keys changes what is kept in clear
/// (issue 8 §5): every change to an authenticated column is refused on read, and every
/// change to the security log is found and kept as a finding.
@Suite struct IntegrityTests {
    /// Runs `sql` on the closed node's database, as someone with the file would.
    private func edit(_ dir: TempDir, _ sql: String) throws {
        let db = try Database(path: dir.path + "/" + Store.fileName)
        defer { db.close() }
        try db.execute(sql)
    }

    private func reopen(_ dir: TempDir, clock: TestClock? = nil) throws -> Node {
        let node = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
        try node.unlock(pin: testPIN)
        return node
    }

    // MARK: - Rows

    @Test func markingAContactVerifiedInTheFileIsDetected() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        let carol = try node.addContact(card: try cardText("Carol"))
        try node.verifyContact(carol.id)  // through the API: still readable
        node.close()

        try edit(dir, "UPDATE contacts SET verified = 1 WHERE id = \(bob.id)")
        let reopened = try reopen(dir)
        #expect(try reopened.contact(carol.id).verified)
        #expect(errorMessage { _ = try reopened.contact(bob.id) }?.contains("verification") == true)
        #expect(throws: YaOKError(.corruptStore)) { try reopened.contacts() }
        // Nor can the altered row be re-authenticated by verifying it now.
        #expect(throws: YaOKError(.corruptStore)) { try reopened.verifyContact(bob.id) }
    }

    @Test func copyingAnotherContactsMACIsDetected() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        let carol = try node.addContact(card: try cardText("Carol"))
        try node.verifyContact(carol.id)
        node.close()
        try edit(dir, """
            UPDATE contacts SET verified = 1, mac = (SELECT mac FROM contacts WHERE id = \(carol.id)) WHERE id = \(bob.id)
            """)
        #expect(throws: YaOKError(.corruptStore)) { try reopen(dir).contact(bob.id) }
    }

    @Test(arguments: ["status = 3", "status = 4", "unread = 1", "sent_ms = 5", "created_ms = created_ms + 1",
                      "sender_ts_ms = 7", "received_ms = 9"])
    func changingAMessagesClearColumnsIsDetected(change: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        let sent = try node.send(to: bob.id, text: "hello Bob")
        _ = try node.retry(sent.messageID)  // a status written again through the API: fine
        #expect(try node.outgoingMessage(sent.messageID).status == .pending)
        node.close()

        try edit(dir, "UPDATE messages SET \(change)")
        let reopened = try reopen(dir)
        #expect(errorMessage { _ = try reopened.outgoingMessage(sent.messageID) }?.contains("status") == true)
        #expect(throws: YaOKError(.corruptStore)) { try reopened.history(bob.id) }
        #expect(throws: YaOKError(.corruptStore)) { try reopened.retry(sent.messageID) }
    }

    @Test func statusAndReadStateWrittenThroughTheNodeStayValid() throws {
        let pair = try Pair()
        defer { pair.close() }
        let sent = try pair.alice.send(to: pair.bobID, text: "out")
        let answer = try pair.bob.send(to: pair.aliceID, text: "in")
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        #expect(eventually { (try? pair.alice.status(of: sent.messageID)) == .delivered
                             && (try? pair.bob.status(of: answer.messageID)) == .delivered })
        pipe.close()
        #expect(try pair.alice.history(pair.bobID).messages.contains { $0.unread })
        #expect(try pair.alice.markRead(pair.bobID) == 1)
        pair.alice.close()
        let reopened = try reopen(pair.dirA)
        let page = try reopened.history(pair.bobID)
        #expect(page.messages.map(\.status) == [.delivered, .delivered])
        #expect(page.messages.allSatisfy { !$0.unread })
        #expect(page.messages.first { $0.direction == .outgoing }?.sentAt != nil)
        reopened.close()
    }

    @Test func redirectingAnOutboxEntryIsDetected() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        let carol = try node.addContact(card: try cardText("Carol"))
        let message = try node.send(to: bob.id, text: "for Bob")
        #expect(try node.outbox().map(\.messageID) == [message.messageID])
        node.close()
        try edit(dir, "UPDATE outbox SET contact_id = \(carol.id)")
        // Found at the unlock, which reads every message's row to bring the statuses in line
        // (DeliveryEngine+DamagedOutbox): taken out unsent, never sent to Carol.
        let reopened = try reopen(dir)
        defer { reopened.close() }
        #expect(eventually { (try? reopened.securityEvents().contains { $0.kind == .outboxTampered }) == true })
        #expect(try reopened.outgoingMessage(message.messageID).status == .failed)
        #expect(try reopened.outbox().isEmpty)
    }

    @Test func outboxSchedulingStaysClear() throws {
        // State, attempts and the next attempt change while locked: not authenticated.
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        _ = try node.send(to: bob.id, text: "for Bob")
        node.close()
        try edit(dir, "UPDATE outbox SET attempts = 3, next_attempt_ms = 1")
        #expect(try reopen(dir).outbox().first?.attempts == 3)
    }

    // MARK: - The security log

    @Test func removingASealedWrongPINIsDetected() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        try node.lock()
        #expect(throws: YaOKError(.wrongPIN)) { try node.unlock(pin: "111111") }
        try node.unlock(pin: testPIN)  // seals the wrong_pin event
        #expect(try node.securityEvents().allSatisfy { !$0.tampered })
        node.close()

        try edit(dir, "DELETE FROM security_events WHERE kind = 'wrong_pin'")
        let reopened = try reopen(dir)
        let events = try reopened.securityEvents()
        #expect(events.contains { $0.kind == .unlocked && $0.tampered })  // the event after the gap
        let finding = try #require(events.last { $0.kind == .logTampered })
        #expect(finding.detail.contains("changed, or follow removed events"))
        #expect(!events.contains { $0.kind == .wrongPIN })
    }

    /// The usual case: PINs are tried on the locked app, and the events removed from the
    /// file before the owner unlocks. The store remembers the last event it wrote.
    @Test func removingAWrongPINWhileTheAppRunsIsDetected() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let recorder = EventRecorder()
        recorder.attach(to: node)
        try node.lock()
        #expect(throws: YaOKError(.wrongPIN)) { try node.unlock(pin: "111111") }
        #expect(throws: YaOKError(.wrongPIN)) { try node.unlock(pin: "111112") }
        // The running node holds its file alone (no other SQLite connection gets in): the
        // edit goes through its own connection, as bytes written into the file would land.
        try node.withDatabase { db in try db.execute("DELETE FROM security_events WHERE kind = 'wrong_pin'") }
        try node.unlock(pin: testPIN)
        let finding = try #require(try node.securityEvents().last { $0.kind == .logTampered })
        #expect(finding.detail.contains("while Ya OK was running"))
        #expect(recorder.wait { if case .security(let e) = $0 { return e.kind == .logTampered } else { return false } } != nil)
    }

    @Test func removingTheLastSealedEventsIsDetected() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        _ = try node.setAutoLock(.after(seconds: 600))  // sealed while unlocked
        node.close()
        try edit(dir, "DELETE FROM security_events WHERE kind = 'auto_lock_changed'")
        let finding = try #require(try reopen(dir).securityEvents().last { $0.kind == .logTampered })
        #expect(finding.detail.contains("events were removed"))
    }

    @Test(arguments: ["detail = 'attempt 1 of 9'", "time_ms = time_ms + 60000", "kind = 'unlocked'"])
    func changingAnEventIsDetected(change: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        try node.lock()
        #expect(throws: YaOKError(.wrongPIN)) { try node.unlock(pin: "111111") }
        try node.unlock(pin: testPIN)
        node.close()
        try edit(dir, "UPDATE security_events SET \(change) WHERE kind = 'wrong_pin'")
        let events = try reopen(dir).securityEvents()
        // The changed event (it still has the wrong_pin row's id) is marked.
        let wrongPINID = try #require(events.first { $0.tampered }).id
        #expect(events.filter(\.tampered).map(\.id) == [wrongPINID])
        #expect(events.contains { $0.kind == .logTampered && $0.detail.contains("#\(wrongPINID)") })
    }

    @Test func aFindingCannotBeClearedFromTheFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        try node.lock()
        #expect(throws: YaOKError(.wrongPIN)) { try node.unlock(pin: "111111") }
        try node.unlock(pin: testPIN)
        node.close()
        try edit(dir, "UPDATE security_events SET detail = 'nothing' WHERE kind = 'wrong_pin'")
        try reopen(dir).close()
        // Clear the marks and remove the finding: both are found again.
        try edit(dir, "UPDATE security_events SET tampered = 0; DELETE FROM security_events WHERE kind = 'log_tampered'")
        let events = try reopen(dir).securityEvents()
        #expect(events.contains { $0.detail == "nothing" && $0.tampered })
        #expect(events.contains { $0.kind == .logTampered })
    }

    @Test func removingOrForgingTheSealIsDetected() throws {
        for sql in ["DELETE FROM meta WHERE key = 'security_log_seal'",
                    "UPDATE meta SET value = zeroblob(72) WHERE key = 'security_log_seal'"] {
            let dir = TempDir()
            defer { dir.remove() }
            try makeNode(dir).close()
            try edit(dir, sql)
            let events = try reopen(dir).securityEvents()
            #expect(events.last { $0.kind == .logTampered }?.detail.contains("seal") == true, "\(sql)")
        }
    }

    /// Nulling every MAC and the seal (the pre-integrity format) on a store set up since:
    /// nothing is adopted, the rows are refused and the log reports it.
    @Test func aDowngradeOfACurrentStoreIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        _ = try node.send(to: bob.id, text: "hi")
        node.close()
        try edit(dir, """
            UPDATE contacts SET mac = NULL, verified = 1; UPDATE messages SET mac = NULL;
            UPDATE security_events SET chain = NULL, mac = NULL; DELETE FROM meta;
            """)
        let reopened = try reopen(dir)
        #expect(throws: YaOKError(.corruptStore)) { try reopened.contacts() }
        #expect(throws: YaOKError(.corruptStore)) { try reopened.history(bob.id) }
        #expect(try reopened.securityEvents().contains { $0.kind == .logTampered })
    }

    /// What the log cannot do, stated so that the documentation stays true: an event
    /// written while locked, removed while the app is not running, before the next unlock.
    @Test func knownLimitALockedEventRemovedWhileTheAppIsStoppedIsNotFound() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        try node.lock()
        #expect(throws: YaOKError(.wrongPIN)) { try node.unlock(pin: "111111") }
        node.close()
        try edit(dir, "DELETE FROM security_events WHERE kind = 'wrong_pin'")
        let events = try reopen(dir).securityEvents()
        #expect(!events.contains { $0.kind == .logTampered || $0.tampered })
    }

    @Test func anOrdinaryLifeRaisesNoFinding() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        let node = try makeNode(dir, clock: clock)
        let bob = try node.addContact(card: try cardText("Bob"))
        try node.verifyContact(bob.id)
        try node.lock()
        for pin in ["111111", "111112", "111113"] { _ = try? node.unlock(pin: pin) }  // a lockout
        clock.advance(seconds: 31)
        try node.unlock(pin: testPIN)
        _ = try node.setAutoLock(.never)
        _ = try node.recordSecurityEvent(.tlsFailure, detail: "relay")
        try node.registerPlatformKey([UInt8](repeating: 9, count: 32))
        try node.lock()
        try node.unlock(platformKey: [UInt8](repeating: 9, count: 32))
        node.close()
        let reopened = try reopen(dir, clock: clock)
        try reopened.lock()
        _ = try? reopened.unlock(pin: "111111")
        try reopened.unlock(pin: testPIN)
        let events = try reopened.securityEvents(limit: 1000)
        #expect(events.count >= 12)
        #expect(events.allSatisfy { !$0.tampered && $0.kind != .logTampered })
        #expect(try reopened.contact(bob.id).verified)
    }

    // MARK: - Stores from before the integrity columns

    /// A store set up before schema 8 (vault format 1: the fixed vector vault) whose rows
    /// have no MACs and whose log has no chain: the first unlock adopts it as it stands and
    /// reseals the vault in format 2; after that, the same "downgrade" is refused.
    @Test func aPreIntegrityStoreIsAdoptedOnceThenProtected() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let pin = VaultVectorTests.pin
        do {
            let store = try Store(directory: dir.path)
            try VaultVectorTests.insertRow(into: store.db)
            store.close()
        }
        var node = try Node(dataDirectory: dir.path, options: fastOptions())
        try node.unlock(pin: pin)
        let bob = try node.addContact(card: try cardText("Bob"))
        try node.verifyContact(bob.id)
        _ = try node.send(to: bob.id, text: "kept")
        node.close()
        let legacy = """
            UPDATE contacts SET mac = NULL; UPDATE messages SET mac = NULL; UPDATE outbox SET mac = NULL;
            UPDATE security_events SET chain = NULL, mac = NULL; DELETE FROM meta;
            """
        try edit(dir, legacy)
        do {  // and the format-1 vault it had before its first unlock
            let db = try Database(path: dir.path + "/" + Store.fileName)
            try VaultVectorTests.insertRow(into: db)
            db.close()
        }

        node = try Node(dataDirectory: dir.path, options: fastOptions())
        try node.unlock(pin: pin)
        #expect(try node.contact(bob.id).verified)
        #expect(try node.history(bob.id).messages.map(\.text) == ["kept"])
        #expect(try node.securityEvents().allSatisfy { !$0.tampered && $0.kind != .logTampered })
        node.close()
        let store = try Store(directory: dir.path)
        let vault = try #require(try store.vault(.pin))
        #expect(try vault.open(pin: SecureBytes(utf8: pin))?.format == VaultContents.currentFormat)
        store.close()

        // The vault now says "authenticated rows": the same rewrite is no longer adopted.
        try edit(dir, legacy + "UPDATE contacts SET verified = 0;")
        node = try Node(dataDirectory: dir.path, options: fastOptions())
        try node.unlock(pin: pin)
        #expect(throws: YaOKError(.corruptStore)) { try node.contact(bob.id) }
        #expect(try node.securityEvents().contains { $0.kind == .logTampered })
        node.close()
    }

    /// The vault row put back to its format-1 copy (from an old backup of the file), with
    /// the log's seal removed and an event erased: the store has integrity data, so
    /// nothing is adopted and the removed seal is reported.
    @Test func aVaultRolledBackToFormat1DoesNotReopenAdoption() throws {
        let dir = TempDir()
        defer { dir.remove() }
        do {
            let store = try Store(directory: dir.path)
            try VaultVectorTests.insertRow(into: store.db)
            store.close()
        }
        var node = try Node(dataDirectory: dir.path, options: fastOptions())
        try node.unlock(pin: VaultVectorTests.pin)  // adopts, reseals in format 2
        try node.lock()
        #expect(throws: YaOKError(.wrongPIN)) { try node.unlock(pin: "111111") }
        try node.unlock(pin: VaultVectorTests.pin)
        node.close()

        try edit(dir, "DELETE FROM meta; DELETE FROM security_events WHERE kind = 'wrong_pin'")
        do {
            let db = try Database(path: dir.path + "/" + Store.fileName)
            try VaultVectorTests.insertRow(into: db)
            db.close()
        }
        node = try Node(dataDirectory: dir.path, options: fastOptions())
        try node.unlock(pin: VaultVectorTests.pin)
        let events = try node.securityEvents()
        #expect(events.last { $0.kind == .logTampered }?.detail.contains("seal") == true)
        #expect(events.contains { $0.tampered })
        node.close()
    }
}
