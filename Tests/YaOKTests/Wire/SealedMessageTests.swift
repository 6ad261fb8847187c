import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct SealedMessageTests {
    let alice = try! Identity(name: "Alice")
    let bob = try! Identity(name: "Bob")
    let now: Int64 = 1_700_000_000_000

    func sealed(_ text: String = "Hello, Bob!") throws -> (RoutedHeader, [UInt8]) {
        try SealedMessage.seal(Array(text.utf8), from: alice, to: bob.publicIdentity.encryptionKey, createdMs: now)
    }

    func open(_ packet: [UInt8], by identity: Identity? = nil) throws -> Envelope.Opened {
        guard case .routed(let header, let payload) = try Packet.decode(packet) else { throw YaOKError(.malformedPacket) }
        return try SealedMessage.open(header, payload: payload, by: identity ?? bob)
    }

    @Test func roundTripThroughTheWire() throws {
        let (header, packet) = try sealed()
        #expect(header.type == .message)
        #expect(packet.count == RoutedHeader.length + (try Envelope.sealedLength(bodyLength: 11)))
        let opened = try open(packet)
        #expect(opened.body == Array("Hello, Bob!".utf8))
        #expect(opened.senderKey == alice.publicIdentity.encryptionKey)
    }

    @Test func forwardersMayChangeTheHopLimitOnly() throws {
        let (_, packet) = try sealed()
        var forwarded = packet
        forwarded[2] = forwarded[2] &- 1
        #expect(try open(forwarded).body == Array("Hello, Bob!".utf8))

        // Every other header byte is authenticated: a change is refused (as tampered when it
        // still parses and routes to Bob, otherwise as a malformed or foreign packet).
        for offset in 0..<RoutedHeader.length where offset != 2 {
            var altered = packet
            altered[offset] ^= 0x01
            #expect(throws: YaOKError.self) { try open(altered) }
        }
        var lifetime = packet
        lifetime[26] ^= 0x01  // lifetime, low byte: still parses, still Bob's tag
        #expect(throws: YaOKError(.tampered)) { try open(lifetime) }
        var type = packet
        type[1] = PacketType.ack.rawValue
        guard case .routed(let ackHeader, let payload) = try Packet.decode(type) else { Issue.record("no packet"); return }
        #expect(throws: YaOKError(.invalidArgument)) { try SealedMessage.open(ackHeader, payload: payload, by: bob) }
    }

    @Test func theOutboxIDTravelsInTheHeader() throws {
        let id = MessageID.random()
        let (header, packet) = try SealedMessage.seal(Array("hi".utf8), from: alice, to: bob.publicIdentity.encryptionKey,
                                                      createdMs: now, messageID: id)
        #expect(header.messageID == id)
        guard case .routed(let decoded, _) = try Packet.decode(packet) else { Issue.record("not routed"); return }
        #expect(decoded.messageID == id)
        #expect(HopLimit.initialRange.contains(decoded.hopLimit))
    }

    @Test func notForMeByRoutingTag() throws {
        let (_, packet) = try sealed()
        #expect(throws: YaOKError(.notForMe)) { try open(packet, by: try Identity(name: "Eve")) }
    }

    /// docs/PROTOCOL.md §4.2 "wire-sealed-message": the whole packet, byte for byte.
    @Test func sealedMessageVector() throws {
        let v = try #require(try ProtocolVector.named("wire-sealed-message").first)
        func identity(_ key: String) throws -> Identity {
            let idv = try #require(try ProtocolVector.named(try v.string(key)).first)
            return try Identity(name: try idv.string("display_name"), secrets: try SecureBytes(copying: try idv.hex("secrets")))
        }
        let (sender, recipient) = (try identity("sender"), try identity("recipient"))
        let created = try v.int64("created_ms")
        let tag = try RoutingTag.derive(recipientKey: recipient.publicIdentity.encryptionKey, createdMs: created)
        #expect(tag.bytes == (try v.hex("routing_tag")))
        let header = try RoutedHeader(type: .message, hopLimit: UInt8(try v.uint64("hop_limit")),
                                      messageID: MessageID(bytes: try v.hex("message_id")), createdMs: created,
                                      lifetimeMinutes: UInt16(try v.uint64("lifetime_min")), routingTag: tag)
        let body = Array(try v.string("body_utf8").utf8)
        let ad = header.authenticatedBytes(payloadLength: try Envelope.sealedLength(bodyLength: body.count))
        #expect(ad == (try v.hex("authenticated")))
        let sealed = try Envelope.seal(body, from: sender, to: recipient.publicIdentity.encryptionKey,
                                       messageID: header.messageID.bytes, timestamp: created, associatedData: ad,
                                       ephemeralSecret: try v.hex("ephemeral_secret"))
        #expect(try Packet.routed(header, payload: sealed).encode() == (try v.hex("packet")))
        #expect(try open(try v.hex("packet"), by: recipient).body == body)
    }
}
