import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// What text a message body may carry, and what a receiver does with a body that is not
/// text (docs/PROTOCOL.md §3, "Message text"): nothing a contact sends is lost or left to be
/// retried for a week.
@Suite struct MessageTextTests {
    /// A packet from Alice to Bob carrying `body` exactly, sealed as another implementation
    /// would (the library's own `send` takes a String, so always UTF-8).
    func packet(_ body: [UInt8], _ pair: Pair, at time: Int64 = Clock.milliseconds()) throws -> [UInt8] {
        try SealedMessage.seal(body, from: try pair.alice.identity(), to: try pair.bob.profile().publicIdentity.encryptionKey,
                               createdMs: time).packet
    }

    /// Acks owed to the sender (not counting the release-only acks beside them, §13.5).
    func acksOwed(_ node: Node) throws -> Int {
        try node.acknowledgingAcks.count
    }

    /// Any valid UTF-8 is stored byte for byte, whatever it holds: NUL and other controls,
    /// white space only, bidirectional controls, a byte order mark, CR LF, text not in NFC.
    /// (The library's own `send` refuses empty and white-space-only text; a receiver does
    /// not, or an honest sender of such text would retry for a week.)
    @Test func validTextIsStoredExactlyAsSent() throws {
        let pair = try Pair()
        defer { pair.close() }
        let bodies: [[UInt8]] = [
            [0x00], Array("a\u{0}b\u{7}".utf8), Array(" ".utf8), Array("\u{3000}\t\n".utf8),
            Array("\u{202E}txt.exe".utf8), Array("\u{FEFF}hello".utf8), Array("one\r\ntwo\r".utf8),
            Array("e\u{301}".utf8), [0xEF, 0xBF, 0xBF],  // "é" decomposed; U+FFFF, a noncharacter
        ]
        for body in bodies { try pair.bob.injectRouted(try packet(body, pair)) }
        let stored = try pair.bob.history(pair.aliceID, limit: 1000).messages.map { Array($0.text.utf8) }
        #expect(stored == bodies)
        #expect(try acksOwed(pair.bob) == bodies.count)
        #expect(try !pair.bob.securityEvents().contains { $0.kind == .invalidText || $0.kind == .tamperedMessage })
    }

    /// A body that is not UTF-8 (from a contact, authentic) is taken: stored with each
    /// maximal ill-formed part replaced by one U+FFFD (as Python's and WHATWG's decoders do),
    /// acknowledged so that its sender stops, and recorded once in the security log. It
    /// used to be refused with no receipt and no ack, so a sender retried it until it expired.
    /// docs/PROTOCOL.md §3.2, vector `text-repair`.
    @Test func aBodyThatIsNotUTF8IsStoredRepairedAcknowledgedAndLogged() throws {
        let pair = try Pair()
        defer { pair.close() }
        let v = try #require(try ProtocolVector.named("text-repair").first)
        let bytes = try packet(try v.hex("body"), pair)
        try pair.bob.injectRouted(bytes)
        let stored = try pair.bob.history(pair.aliceID, limit: 10).messages.map { Array($0.text.utf8) }
        #expect(stored == [try v.hex("text")])
        #expect(try pair.bob.texts(pair.aliceID) == ["a\u{FFFD} b\u{FFFD}\u{FFFD}\u{FFFD} c\u{FFFD}\u{FFFD}\u{FFFD} d\u{FFFD}"])
        #expect(try acksOwed(pair.bob) == 1)
        let logged = try pair.bob.securityEvents().filter { $0.kind == .invalidText }
        #expect(logged.count == 1)
        #expect(logged.first?.detail.contains("not valid UTF-8") == true)
        // Taken, so remembered: the same packet again is a duplicate (a receipt, nothing more).
        try pair.bob.injectRouted(bytes)
        #expect(try pair.bob.texts(pair.aliceID).count == 1)
        #expect(try pair.bob.securityEvents().filter { $0.kind == .invalidText }.count == 1)
    }

    /// The longest body that is all invalid bytes (10,240 × 0xFF) becomes 30,720 bytes of
    /// U+FFFD, more than the send limit and than the wire's largest padding bucket: the
    /// store used to refuse it ("Message too large"), so it was neither stored, nor acked,
    /// nor logged, and its sender retried for a week. Over a link (the routed pipeline as a
    /// link runs it) it is stored, marked repaired, acked and logged.
    @Test func theLongestInvalidBodyIsStoredOverALink() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.bob.injectRouted(try packet([UInt8](repeating: 0xFF, count: Envelope.maxBodyLength), pair))
        let stored = try pair.bob.history(pair.aliceID, limit: 10).messages
        #expect(stored.map { $0.text.utf8.count } == [Envelope.maxReceivedTextLength])
        #expect(stored.first?.text == String(repeating: "\u{FFFD}", count: Envelope.maxBodyLength))
        #expect(stored.map(\.repaired) == [true])
        #expect(try acksOwed(pair.bob) == 1)
        #expect(try pair.bob.securityEvents().filter { $0.kind == .invalidText }.count == 1)
    }

    /// The same over a real link (a memory pipe): Alice's outbox holds the packet, the link
    /// carries it, Bob stores it, and his end-to-end ack makes it delivered at Alice's.
    @Test func theLongestInvalidBodyIsStoredAndAckedOverARealLink() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (header, bytes) = try SealedMessage.seal([UInt8](repeating: 0xFF, count: Envelope.maxBodyLength),
                                                     from: try pair.alice.identity(),
                                                     to: try pair.bob.profile().publicIdentity.encryptionKey,
                                                     createdMs: Clock.milliseconds())
        try pair.alice.withStore { store, s in
            guard let keys = s.keys else { throw YaOKError(.locked) }
            _ = try store.insertMessage(conversation: pair.bobID, messageID: header.messageID.bytes, direction: .outgoing,
                                        status: .pending, text: "(sealed by hand)", senderTimestamp: header.createdMs,
                                        createdAt: header.createdMs, receivedAt: nil, unread: false, cipher: keys.cipher)
            try store.enqueue(.message, packetID: header.messageID, contactID: pair.bobID, packet: bytes,
                              now: header.createdMs, expiresAt: header.expiresAtMs)
        }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { (try? pair.alice.status(of: header.messageID)) == .delivered })
        let stored = try pair.bob.history(pair.aliceID, limit: 10).messages
        #expect(stored.map { $0.text.utf8.count } == [Envelope.maxReceivedTextLength])
        #expect(stored.map(\.repaired) == [true])
        #expect(try pair.bob.securityEvents().filter { $0.kind == .invalidText }.count == 1)
    }

    /// The same over a relay (a carrier): stored, acked, logged, and only then released at
    /// the relay (it used to be released unstored, with no ack, so the sender re-posted).
    @Test func theLongestInvalidBodyIsStoredOverACarrier() throws {
        let pair = try Pair()
        defer { pair.close() }
        let released = Locked<[MessageID]>([])
        let posted = Locked<Int>(0)
        let carrier = try pair.bob.openCarrier(transport: "relay", route: "relay.test:4433", relay: [UInt8](repeating: 0x42, count: 16),
                                               callbacks: CarrierCallbacks(
            post: { p in posted.withLock { $0 += p.count } }, release: { ids in released.withLock { $0 += ids } },
            mailboxesChanged: {}, closed: { _ in }))
        let (header, bytes) = try SealedMessage.seal([UInt8](repeating: 0xFF, count: Envelope.maxBodyLength),
                                                     from: try pair.alice.identity(),
                                                     to: try pair.bob.profile().publicIdentity.encryptionKey,
                                                     createdMs: Clock.milliseconds())
        #expect(carrier.receive(bytes))
        #expect(eventually { released.withLock { $0.contains(header.messageID) } })
        #expect(eventually { posted.withLock { $0 } >= 1 })  // the ack, through the relay
        let stored = try pair.bob.history(pair.aliceID, limit: 10).messages
        #expect(stored.map { $0.text.utf8.count } == [Envelope.maxReceivedTextLength])
        #expect(stored.map(\.repaired) == [true])
        #expect(try pair.bob.securityEvents().filter { $0.kind == .invalidText }.count == 1)
    }

    /// A valid text is not marked repaired; the flag survives reading the row back.
    @Test func onlyARepairedTextIsMarkedRepaired() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.bob.injectRouted(try packet(Array("fine".utf8), pair))
        try pair.bob.injectRouted(try packet([0x61, 0xC3], pair))
        let stored = try pair.bob.history(pair.aliceID, limit: 10).messages
        #expect(Set(stored.map { "\($0.text)|\($0.repaired)" }) == ["fine|false", "a\u{FFFD}|true"])
        #expect(stored.contains { $0.json.serialized.contains("\"repaired\":true") })
    }

    /// A contact cannot flood the security log with `invalid_text` events (one per new
    /// message ID used to be logged, uncapped: 3,000 of them buried key-change events):
    /// three per contact per day, then the rest as one summary when the next one comes
    /// after the day. Every message is still stored and acked.
    @Test func invalidTextEventsAreCappedPerContactPerDay() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        for _ in 0..<50 { try pair.bob.injectRouted(try packet([0xFF], pair, at: clock.now)) }
        #expect(try pair.bob.texts(pair.aliceID).count == 50)
        #expect(try acksOwed(pair.bob) == 50)
        var logged = try pair.bob.securityEvents().filter { $0.kind == .invalidText }
        #expect(logged.count == InvalidTextLog.loggedPerDay)
        #expect(logged.last?.detail.contains("logged as one summary") == true)
        clock.advance(seconds: 86_400)
        try pair.bob.injectRouted(try packet([0xFF], pair, at: clock.now))
        logged = try pair.bob.securityEvents().filter { $0.kind == .invalidText }
        #expect(logged.count == InvalidTextLog.loggedPerDay + 2)
        #expect(logged.contains { $0.detail.hasPrefix("47 more messages from contact \(pair.aliceID)") })
    }

    /// A contact that floods and then stops still gets its summary: the delivery timer's
    /// sweep logs it once the day is over, and only once.
    @Test func theSummaryComesWhenTheDayEndsEvenIfTheContactStops() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        for _ in 0..<10 { try pair.bob.injectRouted(try packet([0xC0], pair, at: clock.now)) }
        pair.bob.runDeliveryTimers()
        #expect(try pair.bob.securityEvents().filter { $0.kind == .invalidText }.count == InvalidTextLog.loggedPerDay)
        clock.advance(seconds: 86_400)
        pair.bob.runDeliveryTimers()
        pair.bob.runDeliveryTimers()
        let logged = try pair.bob.securityEvents().filter { $0.kind == .invalidText }
        #expect(logged.count == InvalidTextLog.loggedPerDay + 1)
        #expect(logged.last?.detail.hasPrefix("7 more messages from contact \(pair.aliceID)") == true)
    }
}
