import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct NodeMessagesTests {
    private func id(_ n: Int) -> [UInt8] { [UInt8](repeating: 0, count: 12) + [0, 0, UInt8(n >> 8), UInt8(n & 0xff)] }

    @Test func historyIsInSenderTimeOrderWithCursorPages() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        // Arrivals out of order: sender timestamps 1...250 shuffled.
        var order = Array(1...250)
        order.shuffle()
        for n in order {
            try node.storeIncoming(from: bob.id, text: "m\(n)", messageID: id(n), sentAt: Int64(n) * 1000)
        }
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

    @Test func batchIsAllOrNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        let good = (0..<10).map { IncomingMessage(contactID: bob.id, text: "b\($0)", messageID: id($0), sentAt: Int64($0)) }
        #expect(throws: YaOKError(.notFound)) {
            try node.storeIncoming(good + [IncomingMessage(contactID: 999, text: "x", messageID: id(99), sentAt: 0)])
        }
        #expect(try node.history(bob.id).messages.isEmpty)
        let results = try node.storeIncoming(good + [good[0]])
        #expect(results.map(\.duplicate) == Array(repeating: false, count: 10) + [true])
        #expect(try node.history(bob.id).messages.map(\.text) == (0..<10).map { "b\($0)" })
    }

    @Test func equalTimestampsKeepInsertionOrder() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        for n in 0..<5 { try node.storeIncoming(from: bob.id, text: "t\(n)", messageID: id(n), sentAt: 42) }
        let first = try node.history(bob.id, limit: 2)
        let rest = try node.history(bob.id, before: first.olderCursor, limit: 10)
        #expect((rest.messages + first.messages).map(\.text) == ["t0", "t1", "t2", "t3", "t4"])
    }

    @Test func statusTimesUnreadAndDuplicates() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        let node = try makeNode(dir, clock: clock)
        let bob = try node.addContact(card: try cardText("Bob"))
        let out = try node.storeOutgoing(to: bob.id, text: "hello")
        #expect(out.status == .pending && out.direction == .outgoing && !out.unread && out.sentAt == nil)
        #expect(out.createdAt == clock.now && out.senderTimestamp == clock.now)
        clock.advance(seconds: 2)
        let sent = try node.updateMessageStatus(out.messageID.bytes, to: .sent)
        #expect(sent.status == .sent && sent.sentAt == clock.now)
        clock.advance(seconds: 2)
        let delivered = try node.updateMessageStatus(out.messageID.bytes, to: .delivered)
        #expect(delivered.status == .delivered && delivered.sentAt == sent.sentAt)
        #expect(throws: YaOKError(.notFound)) { try node.updateMessageStatus(id(77), to: .failed) }

        let (incoming, dup1) = try node.storeIncoming(from: bob.id, text: "hi", messageID: id(1), sentAt: 10)
        #expect(!dup1 && incoming.unread && incoming.receivedAt == clock.now && incoming.status == .delivered)
        let (again, dup2) = try node.storeIncoming(from: bob.id, text: "changed", messageID: id(1), sentAt: 11)
        #expect(dup2 && again.text == "hi")
        #expect(try node.markRead(bob.id) == 1)
        #expect(try node.history(bob.id).messages.allSatisfy { !$0.unread })

        #expect(throws: YaOKError(.emptyMessage)) { try node.storeOutgoing(to: bob.id, text: "") }
        #expect(throws: YaOKError(.emptyMessage)) { try node.storeOutgoing(to: bob.id, text: " \n\t ") }
        #expect(try node.storeOutgoing(to: bob.id, text: String(repeating: "x", count: 10 * 1024)).text.utf8.count == 10 * 1024)
        #expect(throws: YaOKError(.messageTooLarge)) { try node.storeOutgoing(to: bob.id, text: String(repeating: "x", count: 10 * 1024 + 1)) }
        #expect(throws: YaOKError(.invalidArgument)) { try node.storeIncoming(from: bob.id, text: "x", messageID: [1], sentAt: 0) }
        #expect(throws: YaOKError(.notFound)) { try node.storeOutgoing(to: 999, text: "x") }
    }

    @Test func eventsArriveOnTheEventThread() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let recorder = EventRecorder()
        recorder.attach(to: node)
        let bob = try node.addContact(card: try cardText("Bob"))
        let m = try node.storeOutgoing(to: bob.id, text: "hello")
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
            _ = try node.storeOutgoing(to: bob.id, text: text)
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
