import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// docs/PROTOCOL.md §6.2 "ack-bob-to-alice": the ack key from either side, the whole ack
/// packet byte for byte (its own header as associated data, no padding), and the IDs it
/// gives back to the one it acknowledges.
@Suite struct DeliveryAckVectorTests {
    func identity(_ name: String) throws -> Identity {
        let v = try #require(try ProtocolVector.named(name).first)
        return try Identity(name: try v.string("display_name"), secrets: try SecureBytes(copying: try v.hex("secrets")))
    }

    @Test func ackVector() throws {
        let v = try #require(try ProtocolVector.named("ack-bob-to-alice").first)
        let (acker, ackee) = (try identity(try v.string("acker")), try identity(try v.string("ackee")))
        let ackerKey = acker.publicIdentity.encryptionKey, ackeeKey = ackee.publicIdentity.encryptionKey

        let outgoing = try DeliveryAck.key(own: acker, peerKey: ackeeKey, ownIsAcker: true)
        let incoming = try DeliveryAck.key(own: ackee, peerKey: ackerKey, ownIsAcker: false)
        #expect(outgoing.withUnsafeBytes { Array($0) } == (try v.hex("ack_key")))
        #expect(incoming.withUnsafeBytes { Array($0) } == (try v.hex("ack_key")))
        // The other direction's key differs: an ack cannot be reflected to its maker.
        let reflected = try DeliveryAck.key(own: ackee, peerKey: ackerKey, ownIsAcker: true)
        #expect(reflected.withUnsafeBytes { Array($0) } != (try v.hex("ack_key")))

        let created = try v.int64("created_ms")
        let route = try RoutePair(own: acker, peerKey: ackeeKey)
        #expect(route.outgoingTag(createdMs: created).bytes == (try v.hex("routing_tag")))
        let header = try RoutedHeader(type: .ack, hopLimit: UInt8(try v.uint64("hop_limit")),
                                      messageID: MessageID(bytes: try v.hex("message_id")), createdMs: created,
                                      lifetimeMinutes: UInt16(try v.uint64("lifetime_min")),
                                      routingTag: route.outgoingTag(createdMs: created))
        let acknowledged = try MessageID(bytes: try v.hex("acknowledged"))
        let packet = try DeliveryAck.seal([acknowledged], key: outgoing, header: header, nonce: try v.hex("nonce"))
        #expect(packet == (try v.hex("packet")))
        #expect(packet.count == 94)

        guard case .routed(let parsed, let payload) = try Packet.decode(packet) else { Issue.record("not routed"); return }
        #expect(payload == (try v.hex("payload")))
        #expect(parsed.authenticatedBytes(payloadLength: payload.count) == (try v.hex("authenticated")))
        #expect(DeliveryAck.open(parsed, payload: payload, key: incoming) == [acknowledged])
        #expect(DeliveryAck.open(parsed, payload: payload, key: reflected) == nil)
        // The header is bound in: another hop limit is fine, another lifetime is not.
        var forwarded = parsed
        forwarded.hopLimit = 3
        #expect(DeliveryAck.open(forwarded, payload: payload, key: incoming) == [acknowledged])
        var altered = parsed
        altered.lifetimeMinutes = 60
        #expect(DeliveryAck.open(altered, payload: payload, key: incoming) == nil)
    }

    /// What the library seals by default: 10,080 minutes (§6.2), like a message (§6.1).
    @Test func acksAndMessagesLiveSevenDaysByDefault() throws {
        let alice = try identity("identity-alice"), bob = try identity("identity-bob")
        let bobKey = bob.publicIdentity.encryptionKey
        let (message, _) = try SealedMessage.seal([1], from: alice, to: bobKey, createdMs: 1_700_000_000_000)
        #expect(message.lifetimeMinutes == 10_080)
        let key = try DeliveryAck.key(own: bob, peerKey: alice.publicIdentity.encryptionKey, ownIsAcker: true)
        let (ack, _) = try DeliveryAck.seal([message.messageID], key: key,
                                            route: RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey),
                                            createdMs: 1_700_000_060_000)
        #expect(ack.lifetimeMinutes == 10_080 && ack.type == .ack)
    }
}
