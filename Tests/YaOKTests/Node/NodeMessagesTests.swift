import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct NodeMessagesTests {
    @Test func historyIsInSenderTimeOrderWithCursorPages() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        let node = try makeNode(dir, clock: clock)
        let bobIdentity = try Identity(name: "Bob")
        let bob = try node.addContact(card: bobIdentity.card.text)
        // Arrivals out of order (a retry overtaken by later messages): sender times
        // 1...250 s before now, shuffled.
        var order = Array(1...250)
        order.shuffle()
        for n in order { try node.receive("m\(n)", from: bobIdentity, sentAt: clock.now - 300_000 + Int64(n) * 1000) }
        var seen: [String] = []
        var cursor: String? = nil
        var pages = 0
        repeat {
            let page = try node.history(bob.id, before: cursor, limit: 100)
            seen = page.messages.map(\.text) + seen
            cursor = page.olderCursor
            pages += 1
        } while cursor != nil
        #expect(pages == 3)
        #expect(seen == (1...250).map { "m\($0)" })
        #expect(throws: YaOKError(.invalidArgument)) { try node.history(bob.id, before: "garbage") }
        #expect(throws: YaOKError(.invalidArgument)) { try node.history(bob.id, limit: 0) }
    }

    @Test func aSendBatchIsAllOrNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        let good = (0..<10).map { (contactID: bob.id, text: "b\($0)") }
        #expect(throws: YaOKError(.notFound)) { try node.send(good + [(contactID: 999, text: "x")]) }
        #expect(throws: YaOKError(.emptyMessage)) { try node.send(good + [(contactID: bob.id, text: " ")]) }
        #expect(try node.history(bob.id).messages.isEmpty)
        #expect(try node.outbox().isEmpty)
        #expect(try node.send(good).map(\.text) == (0..<10).map { "b\($0)" })
        #expect(try node.history(bob.id).messages.map(\.text) == (0..<10).map { "b\($0)" })
    }

    @Test func equalTimestampsKeepInsertionOrder() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        let node = try makeNode(dir, clock: clock)
        let bobIdentity = try Identity(name: "Bob")
        let bob = try node.addContact(card: bobIdentity.card.text)
        for n in 0..<5 { try node.receive("t\(n)", from: bobIdentity, sentAt: clock.now - 1000) }
        let first = try node.history(bob.id, limit: 2)
        let rest = try node.history(bob.id, before: first.olderCursor, limit: 10)
        #expect((rest.messages + first.messages).map(\.text) == ["t0", "t1", "t2", "t3", "t4"])
    }

    /// Times, statuses and read state as a message goes from Alice to Bob over a link, and
    /// a retransmission that Bob keeps once.
    @Test func statusTimesUnreadAndDuplicates() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        let out = try pair.alice.send(to: pair.bobID, text: "hello")
        #expect(out.status == .pending && out.direction == .outgoing && !out.unread && out.sentAt == nil)
        #expect(out.createdAt == clock.now && out.senderTimestamp == clock.now)
        clock.advance(seconds: 2)
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { (try? pair.alice.status(of: out.messageID)) == .delivered })
        let delivered = try pair.alice.outgoingMessage(out.messageID)
        #expect(delivered.sentAt == clock.now)

        let incoming = try #require(try pair.bob.history(pair.aliceID).messages.first)
        #expect(incoming.unread && incoming.receivedAt == clock.now && incoming.status == .delivered)
        #expect(incoming.senderTimestamp == out.senderTimestamp && incoming.messageID == out.messageID)
        // The same message ID again, other text: kept once, as first received.
        try pair.bob.receive("changed", from: try pair.alice.identity(), sentAt: clock.now, messageID: out.messageID)
        #expect(try pair.bob.texts(pair.aliceID) == ["hello"])
        #expect(try pair.bob.markRead(pair.aliceID) == 1)
        #expect(try pair.bob.history(pair.aliceID).messages.allSatisfy { !$0.unread })

        let node = pair.alice, bob = pair.bobID
        #expect(throws: YaOKError(.emptyMessage)) { try node.send(to: bob, text: "") }
        #expect(throws: YaOKError(.emptyMessage)) { try node.send(to: bob, text: " \n\t ") }
        #expect(try node.send(to: bob, text: String(repeating: "x", count: 10 * 1024)).text.utf8.count == 10 * 1024)
        #expect(throws: YaOKError(.messageTooLarge)) { try node.send(to: bob, text: String(repeating: "x", count: 10 * 1024 + 1)) }
        #expect(throws: YaOKError(.notFound)) { try node.send(to: 999, text: "x") }
    }

    @Test func eventsArriveOnTheEventThread() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let recorder = EventRecorder()
        recorder.attach(to: node)
        let bob = try node.addContact(card: try cardText("Bob"))
        let m = try node.send(to: bob.id, text: "hello")
        try node.lock()
        #expect(recorder.wait { $0 == .locked(reason: "manual") } != nil)
        let all = recorder.all
        #expect(all.contains(.contactsChanged(contactID: bob.id)))
        #expect(all.contains(.messageStored(m)))
        #expect(recorder.allOnEventThread)
    }

    @Test func aHandlerMayCallBackIntoTheNode() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let recorder = EventRecorder()
        node.setEventHandler { [weak node] event in
            // Runs without the node's lock held: a call back in must not deadlock.
            if case .locked = event, let status = try? node?.status() {
                recorder.record(.unlocked(method: status.locked ? "seen-locked" : "seen-unlocked"))
            }
        }
        try node.lock()
        #expect(recorder.wait { $0 == .unlocked(method: "seen-locked") } != nil)
    }

    /// Stored bodies are padded like envelopes: the file does not tell "ok" from a paragraph.
    @Test func storedBodiesArePaddedToBuckets() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        for text in ["ok", String(repeating: "y", count: 63), String(repeating: "z", count: 64)] {
            _ = try node.send(to: bob.id, text: text)
        }
        #expect(try node.history(bob.id).messages.map { $0.text.count } == [2, 63, 64])
        node.close()
        let store = try Store(directory: dir.path)
        defer { store.close() }
        let lengths = try store.db.rows("SELECT length(body) FROM messages ORDER BY id") { $0.int(0) }
        #expect(lengths[0] == lengths[1])
        #expect(lengths[2] == lengths[1] + 64)
    }
}
