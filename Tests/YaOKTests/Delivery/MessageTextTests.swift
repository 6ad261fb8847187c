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
    func packet(_ body: [UInt8], _ pair: Pair) throws -> [UInt8] {
        try SealedMessage.seal(body, from: try pair.alice.identity(), to: try pair.bob.profile().publicIdentity.encryptionKey,
                               createdMs: Clock.milliseconds()).packet
    }

    func acksOwed(_ node: Node) throws -> Int {
        try node.state.withLock { try $0.store!.outboxRows(kind: .ack).count }
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
}
