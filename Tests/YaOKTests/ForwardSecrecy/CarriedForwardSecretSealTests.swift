import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// docs/PROTOCOL.md §13.6: a carried copy sealed to a receiver key, byte for byte
/// ("fs-carried-alice-to-bob", recomputed by the PyNaCl reference too), and each way
/// opening must fail: the long-term key alone opens nothing.
@Suite struct CarriedForwardSecretSealTests {
    func identity(_ name: String) throws -> Identity {
        let v = try #require(try ProtocolVector.named(name).first)
        return try Identity(name: try v.string("display_name"), secrets: try SecureBytes(copying: try v.hex("secrets")))
    }

    struct Fixture {
        let alice: Identity, bob: Identity
        let receiver: ReceiverKeyPair, announcement: Announcement
        let content: CarriedContent, packet: CarriedPacket
        let vector: ProtocolVector
    }

    func fixture() throws -> Fixture {
        let v = try #require(try ProtocolVector.named("fs-carried-alice-to-bob").first)
        let receiver = try ReceiverKeyPair(id: UInt32(try v.uint64("receiver_key_id")),
                                           secret: try SecureBytes(copying: try v.hex("receiver_secret")))
        let announced = try ReceiverKeyPair(id: UInt32(try v.uint64("announced_key_id")),
                                            secret: try SecureBytes(copying: try v.hex("announced_secret")))
        let alice = try identity(try v.string("sender")), bob = try identity(try v.string("recipient"))
        let content = try CarriedContent(kind: .message(text: Array(try v.string("body_utf8").utf8)),
                                         id: try MessageID(bytes: try v.hex("message_id")[...]),
                                         createdMs: try v.int64("created_ms"), claim: try v.hex("claim"))
        let announcement = Announcement(key: announced.key, release: UInt32(try v.uint64("release")))
        let packet = try CarriedSeal.sealForwardSecret(
            content, from: alice, route: try RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey),
            receiverKey: receiver.key, announce: announcement, lifetimeMs: try v.int64("lifetime_ms"),
            hopLimit: UInt8(try v.uint64("hop_limit")), copyBudget: UInt8(try v.uint64("copy_budget")),
            ephemeral: try SecureBytes(copying: try v.hex("ephemeral_secret")))
        return Fixture(alice: alice, bob: bob, receiver: receiver, announcement: announcement, content: content,
                       packet: packet, vector: v)
    }

    func open(_ f: Fixture, _ packet: CarriedPacket, keys: [ReceiverKeyPair]? = nil,
              sender: [UInt8]? = nil) throws -> CarriedSeal.OpenedForwardSecret {
        try CarriedSeal.openForwardSecret(packet, by: f.bob, senderKey: sender ?? f.alice.publicIdentity.encryptionKey,
                                          receiverKeys: keys ?? [f.receiver])
    }

    @Test func vector() throws {
        let f = try fixture()
        let v = f.vector
        #expect(f.content.encode() == (try v.hex("content")))
        #expect(f.packet.authenticatedHeader == (try v.hex("authenticated")))
        #expect(Array(f.packet.payload.prefix(4)) == (try v.hex("selector")))
        #expect(f.packet.encode() == (try v.hex("packet")))
        #expect(f.packet.identity == (try v.hex("identity")))
        // 44 bytes more than §10.4's carried copy of the same content, in the same bucket.
        let plain = try CarriedPacket.decode(try ProtocolVector.named("carried-message")[0].hex("packet"))
        #expect(f.packet.payload.count - plain.payload.count == 44)
        let decoded = try CarriedPacket.decode(try v.hex("packet"), nowMs: try v.int64("created_ms"))
        let opened = try open(f, decoded)
        #expect(opened.content == f.content)
        #expect(opened.announced == f.announcement)
        #expect(opened.openedWith == f.receiver.key.id)
        #expect(CarriedSeal.isForwardSecret(decoded, receiverKeys: [f.receiver]))
    }

    @Test func theLongTermKeyAloneOpensNothing() throws {
        let f = try fixture()
        // As §10.4 (to the long-term key): the AEAD fails.
        #expect(throws: YaOKError.self) { try CarriedSeal.open(f.packet, by: f.bob, senderKey: f.alice.publicIdentity.encryptionKey) }
        // The long-term secret as if it were the receiver key, or no key: erased.
        let longTerm = try f.bob.encryptionSecret.withUnsafeBytes { try ReceiverKeyPair(id: 7, secret: SecureBytes(copying: $0)) }
        #expect(throws: YaOKError(.expired)) { try open(f, f.packet, keys: [longTerm]) }
        #expect(throws: YaOKError(.expired)) { try open(f, f.packet, keys: []) }
        #expect(!CarriedSeal.isForwardSecret(f.packet, receiverKeys: [longTerm]))
    }

    @Test func everyByteIsProtected() throws {
        let f = try fixture()
        for index in [0, 4, 40, 60, f.packet.payload.count - 1] {
            var bad = f.packet
            bad.payload[index] ^= 1
            #expect(throws: YaOKError.self) { try open(f, bad) }
        }
        #expect(throws: YaOKError(.tampered)) {
            try open(f, f.packet, sender: try Identity(name: "Eve").publicIdentity.encryptionKey)
        }
        // Another sender's MAC under Alice's key in the AD is not possible without her secret;
        // an announcement or claim changed inside needs the AEAD key: covered by the flips above.
        var claim = f.packet
        claim.claimHash[0] ^= 1
        #expect(throws: YaOKError(.tampered)) { try open(f, claim) }
    }
}
