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

    /// Opened as a node would: the sender is whichever of the opener's contacts (here Alice
    /// by default) the routing tag names.
    func open(_ packet: [UInt8], by identity: Identity? = nil, contacts: [[UInt8]]? = nil) throws -> Envelope.Opened {
        guard case .routed(let header, let payload) = try Packet.decode(packet) else { throw YaOKError(.malformedPacket) }
        return try SealedMessage.open(header, payload: payload, by: identity ?? bob,
                                      contacts: contacts ?? [alice.publicIdentity.encryptionKey])
    }

    @Test func roundTripThroughTheWire() throws {
        let (header, packet) = try sealed()
        #expect(header.type == .message)
        #expect(packet.count == RoutedHeader.length + (try PacketEnvelope.sealedLength(bodyLength: 11)))
        #expect(packet.count == RoutedHeader.length + 64 + 64)
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
        #expect(throws: YaOKError(.invalidArgument)) {
            try SealedMessage.open(ackHeader, payload: payload, by: bob, contacts: [alice.publicIdentity.encryptionKey])
        }
    }

    /// A receiver's checks in the order of docs/PROTOCOL.md §4.1 and §4.2: decode, time,
    /// routing tag, envelope.
    func receive(_ packet: [UInt8], nowMs: Int64) throws -> Envelope.Opened {
        guard case .routed(let header, let payload) = try Packet.decode(packet) else {
            throw YaOKError(.internal, "not a routed packet")
        }
        try header.checkTime(nowMs: nowMs)
        return try SealedMessage.open(header, payload: payload, by: bob, contacts: [alice.publicIdentity.encryptionKey])
    }

    static func setCreated(_ packet: inout [UInt8], _ ms: Int64) {
        for i in 0..<6 { packet[19 + i] = UInt8(truncatingIfNeeded: ms >> (8 * (5 - i))) }
    }

    /// §4.2's table of what each changed field gives (issue 8 §10).
    @Test func eachChangedFieldHasItsDocumentedStatus() throws {
        // `now` is 22:13:20 UTC; its day ends 6,400,000 ms later.
        let (_, packet) = try sealed()
        let later = now + 60_000
        #expect(try receive(packet, nowMs: later).body == Array("Hello, Bob!".utf8))
        func status(_ change: (inout [UInt8]) -> Void, nowMs: Int64? = nil) -> YaOKError.Code? {
            var p = packet
            change(&p)
            return errorCode { _ = try receive(p, nowMs: nowMs ?? later) }
        }
        #expect(status { $0[0] = 2 } == .unsupportedVersion)
        #expect(status { $0[1] = 0x07 } == .unknownPacketType)
        #expect(status { $0[1] = 0x03 } == .malformedPacket)          // read as a handshake
        #expect(status { $0[2] = 0 } == nil)                          // the hop limit is not authenticated
        #expect(status { $0[3] ^= 1 } == .tampered)                   // message ID
        #expect(status { Self.setCreated(&$0, now - 1) } == .tampered)                // same UTC day
        #expect(status { Self.setCreated(&$0, now - 80_000_001) } == .notForMe)       // the day before: another tag
        #expect(status({ Self.setCreated(&$0, now + 6_400_000) }, nowMs: now + 6_400_000) == .notForMe)  // the next
        #expect(status { Self.setCreated(&$0, now + 6_400_000) } == .expired)         // … but > 15 min ahead of `later`
        #expect(status { Self.setCreated(&$0, later + 900_001) } == .expired)         // too far ahead
        #expect(status { $0[26] ^= 1 } == .tampered)                  // lifetime
        #expect(status { $0[25] = 0; $0[26] = 0 } == .malformedPacket)  // lifetime 0
        #expect(status { $0[25] = 0; $0[26] = 1 } == .expired)        // 1 minute: over at `later`
        #expect(status { $0[30] ^= 1 } == .notForMe)                  // routing tag
        #expect(status { $0[36] ^= 1 } == .malformedPacket)           // length ≠ the bytes that follow
        #expect(status { p in p.append(0); p[36] &+= 1 } == .tampered)    // length and payload grown alike
        #expect(status { p in p.removeLast(); p[36] &-= 1 } == .malformedEnvelope)  // … cut below 128 bytes
        #expect(status { p in
            p.removeLast(p.count - RoutedHeader.length - 100)
            p[35] = 0
            p[36] = 100
        } == .malformedEnvelope)                                      // cut below the shortest envelope
        // A message retyped as an ack is an ack: it carries no envelope (a node tries its ack
        // keys, none opens it, and it is dropped).
        var ack = packet
        ack[1] = PacketType.ack.rawValue
        guard case .routed(let header, let payload) = try Packet.decode(ack) else { Issue.record("not routed"); return }
        #expect(errorCode {
            _ = try SealedMessage.open(header, payload: payload, by: bob, contacts: [alice.publicIdentity.encryptionKey])
        } == .invalidArgument)
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
        // Eve holds both cards (Alice as a contact, too): she still cannot compute the tag.
        #expect(throws: YaOKError(.notForMe)) { try open(packet, by: try Identity(name: "Eve")) }
        // Bob without Alice among his contacts: a stranger's packet is "not for me" too.
        #expect(throws: YaOKError(.notForMe)) { try open(packet, contacts: []) }
        #expect(throws: YaOKError(.notForMe)) { try open(packet, contacts: [try Identity(name: "Carol").publicIdentity.encryptionKey]) }
    }

    /// Someone who is not Alice seals to Bob under Alice's tag (copied from a packet of
    /// hers the same day): the AEAD opens, the static-static MAC does not.
    @Test func aCopiedTagDoesNotMakeAForgerTheSender() throws {
        let eve = try Identity(name: "Eve")
        let aliceKey = alice.publicIdentity.encryptionKey
        let (genuine, _) = try sealed()
        let header = try RoutedHeader(type: .message, hopLimit: 7, messageID: .random(), createdMs: now,
                                      lifetimeMinutes: 60, routingTag: genuine.routingTag)
        let body = Array("I am Alice".utf8)
        let ad = header.authenticatedBytes(payloadLength: try PacketEnvelope.sealedLength(bodyLength: body.count))
        func forged(claiming claimed: [UInt8]?) throws -> [UInt8] {
            try PacketEnvelope.seal(body, from: eve, to: bob.publicIdentity.encryptionKey, messageID: header.messageID.bytes,
                                    timestamp: now, associatedData: ad, ephemeralSecret: Sodium.randomBytes(32),
                                    claimedSenderKey: claimed)
        }
        // Sealed as herself: the AD binds Eve's key, Bob opens with Alice's.
        #expect(throws: YaOKError(.tampered)) {
            try SealedMessage.open(header, payload: try forged(claiming: nil), by: bob, matchedSender: aliceKey)
        }
        // Alice's key (it is public) in the AD: only the MAC is left to fail.
        #expect(throws: YaOKError(.senderAuthFailed)) {
            try SealedMessage.open(header, payload: try forged(claiming: aliceKey), by: bob, matchedSender: aliceKey)
        }
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
        let tag = try RoutePair(own: sender, peerKey: recipient.publicIdentity.encryptionKey).outgoingTag(createdMs: created)
        #expect(tag.bytes == (try v.hex("routing_tag")))
        let header = try RoutedHeader(type: .message, hopLimit: UInt8(try v.uint64("hop_limit")),
                                      messageID: MessageID(bytes: try v.hex("message_id")), createdMs: created,
                                      lifetimeMinutes: UInt16(try v.uint64("lifetime_min")), routingTag: tag)
        let body = Array(try v.string("body_utf8").utf8)
        let ad = header.authenticatedBytes(payloadLength: try PacketEnvelope.sealedLength(bodyLength: body.count))
        #expect(ad == (try v.hex("authenticated")))
        let sealed = try PacketEnvelope.seal(body, from: sender, to: recipient.publicIdentity.encryptionKey,
                                             messageID: header.messageID.bytes, timestamp: created, associatedData: ad,
                                             ephemeralSecret: try v.hex("ephemeral_secret"))
        #expect(try Packet.routed(header, payload: sealed).encode() == (try v.hex("packet")))
        let opened = try open(try v.hex("packet"), by: recipient, contacts: [sender.publicIdentity.encryptionKey])
        #expect(opened.body == body && opened.senderKey == sender.publicIdentity.encryptionKey)
    }
}
