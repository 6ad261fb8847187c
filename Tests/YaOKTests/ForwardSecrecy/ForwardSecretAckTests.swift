import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// docs/PROTOCOL.md §13.3 "fs-ack-bob-to-alice": the ack with the acker's announcement, with
/// an ID and without (the release-only ack), byte for byte; the §6.2 reader refuses it.
@Suite struct ForwardSecretAckTests {
    func identity(_ name: String) throws -> Identity {
        let v = try #require(try ProtocolVector.named(name).first)
        return try Identity(name: try v.string("display_name"), secrets: try SecureBytes(copying: try v.hex("secrets")))
    }

    @Test func vectors() throws {
        let v = try #require(try ProtocolVector.named("fs-ack-bob-to-alice").first)
        let a = try #require(try ProtocolVector.named(try v.string("ack")).first)
        let acker = try identity(try a.string("acker")), ackee = try identity(try a.string("ackee"))
        let key = try DeliveryAck.key(own: acker, peerKey: ackee.publicIdentity.encryptionKey, ownIsAcker: true)
        let created = try a.int64("created_ms")
        let route = try RoutePair(own: acker, peerKey: ackee.publicIdentity.encryptionKey)
        let header = try RoutedHeader(type: .ack, hopLimit: UInt8(try a.uint64("hop_limit")),
                                      messageID: MessageID(bytes: try a.hex("message_id")), createdMs: created,
                                      lifetimeMinutes: UInt16(try a.uint64("lifetime_min")),
                                      routingTag: route.outgoingTag(createdMs: created))
        let announced = try ReceiverKeyPair(id: UInt32(try v.uint64("announced_key_id")),
                                            secret: SecureBytes(copying: try v.hex("announced_secret")))
        let announcement = Announcement(key: announced.key, release: UInt32(try v.uint64("release")))
        let opener = try DeliveryAck.key(own: ackee, peerKey: acker.publicIdentity.encryptionKey, ownIsAcker: false)
        for (ids, name) in [([try MessageID(bytes: try a.hex("acknowledged"))], "packet"), ([], "release_only_packet")] {
            let packet = try ForwardSecretAck.seal(ids, announcement: announcement, key: key, header: header, nonce: try a.hex("nonce"))
            #expect(packet == (try v.hex(name)))
            guard case .routed(let parsed, let payload) = try Packet.decode(packet) else { Issue.record("not routed"); continue }
            let opened = try #require(ForwardSecretAck.open(parsed, payload: payload, key: opener))
            #expect(opened.ids == ids && opened.announcement == announcement)
            #expect(DeliveryAck.open(parsed, payload: payload, key: opener) == nil)  // §6.2 reader: wrong length
        }
        // And the §6.2 ack is not misread as this one.
        guard case .routed(let parsed, let payload) = try Packet.decode(try a.hex("packet")) else { Issue.record("not routed"); return }
        #expect(ForwardSecretAck.open(parsed, payload: payload, key: opener) == nil)
    }
}
