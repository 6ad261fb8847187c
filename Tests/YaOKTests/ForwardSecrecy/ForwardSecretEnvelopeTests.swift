import Testing
@testable import YaOKSupport
@testable import YaOKCrypto

/// docs/PROTOCOL.md §13.2: the forward-secret envelope byte for byte ("fs-envelope-alice-to-bob"),
/// and each way opening must fail.
@Suite struct ForwardSecretEnvelopeTests {
    func identity(_ name: String) throws -> Identity {
        let v = try #require(try ProtocolVector.named(name).first)
        return try Identity(name: try v.string("display_name"), secrets: try SecureBytes(copying: try v.hex("secrets")))
    }

    struct Fixture {
        let alice: Identity, bob: Identity
        let receiver: ReceiverKeyPair, announcement: Announcement
        let messageID: [UInt8], timestamp: Int64, headerAD: [UInt8], body: [UInt8], sealed: [UInt8], ephemeral: [UInt8]
    }

    func fixture() throws -> Fixture {
        let v = try #require(try ProtocolVector.named("fs-envelope-alice-to-bob").first)
        let receiver = try ReceiverKeyPair(id: UInt32(try v.uint64("receiver_key_id")),
                                           secret: try SecureBytes(copying: try v.hex("receiver_secret")))
        let announced = try ReceiverKeyPair(id: UInt32(try v.uint64("announced_key_id")),
                                            secret: try SecureBytes(copying: try v.hex("announced_secret")))
        #expect(receiver.key.publicKey == (try v.hex("receiver_public")))
        #expect(announced.key.publicKey == (try v.hex("announced_public")))
        return Fixture(alice: try identity(try v.string("sender")), bob: try identity(try v.string("recipient")),
                       receiver: receiver,
                       announcement: Announcement(key: announced.key, release: UInt32(try v.uint64("release"))),
                       messageID: try v.hex("message_id"), timestamp: try v.int64("timestamp_ms"),
                       headerAD: try v.hex("header_ad"), body: Array(try v.string("body_utf8").utf8),
                       sealed: try v.hex("sealed"), ephemeral: try v.hex("ephemeral_secret"))
    }

    func open(_ f: Fixture, _ sealed: [UInt8], keys: [ReceiverKeyPair]? = nil, sender: [UInt8]? = nil) throws
        -> ForwardSecretEnvelope.Opened {
        try ForwardSecretEnvelope.open(sealed, by: f.bob, senderKey: sender ?? f.alice.publicIdentity.encryptionKey,
                                       receiverKeys: keys ?? [f.receiver], messageID: f.messageID,
                                       timestamp: f.timestamp, associatedData: f.headerAD)
    }

    @Test func vector() throws {
        let f = try fixture()
        let sealed = try ForwardSecretEnvelope.seal(f.body, from: f.alice, to: f.bob.publicIdentity.encryptionKey,
                                                    receiverKey: f.receiver.key, announce: f.announcement,
                                                    messageID: f.messageID, timestamp: f.timestamp,
                                                    associatedData: f.headerAD, ephemeralSecret: f.ephemeral)
        #expect(sealed == f.sealed)
        #expect(sealed.count == (try ForwardSecretEnvelope.sealedLength(bodyLength: f.body.count)))
        #expect(ForwardSecretEnvelope.overhead - PacketEnvelope.overhead == 44)
        let opened = try open(f, f.sealed)
        #expect(opened.body == f.body)
        #expect(opened.announced == f.announcement)
        #expect(opened.openedWith == f.receiver.key.id)
    }

    @Test func anotherReceiverKeyIsExpiredNotGarbage() throws {
        let f = try fixture()
        #expect(throws: YaOKError(.expired)) { try open(f, f.sealed, keys: [try ReceiverKeyPair.generate(id: 7)]) }
        #expect(throws: YaOKError(.expired)) { try open(f, f.sealed, keys: []) }
    }

    @Test func theLongTermKeyAloneOpensNothing() throws {
        // Bob's long-term secret as if it were a receiver key: not what it was sealed to.
        let f = try fixture()
        let longTerm = try f.bob.encryptionSecret.withUnsafeBytes { try ReceiverKeyPair(id: 7, secret: SecureBytes(copying: $0)) }
        #expect(throws: YaOKError(.expired)) { try open(f, f.sealed, keys: [longTerm]) }
    }

    @Test func everyByteIsProtected() throws {
        let f = try fixture()
        for index in [0, 4, 40, 60, f.sealed.count - 1] {
            var bad = f.sealed
            bad[index] ^= 1
            #expect(throws: YaOKError.self) { try open(f, bad) }
        }
        #expect(throws: YaOKError(.tampered)) { try open(f, f.sealed, sender: try Identity(name: "Eve").publicIdentity.encryptionKey) }
        #expect(throws: YaOKError(.malformedEnvelope)) { try open(f, Array(f.sealed.prefix(171))) }
    }

    @Test func anotherSenderCannotPassAsTheContact() throws {
        // Eve seals to Bob's receiver key (anyone can: it is public) and Bob opens it as
        // from Alice: S is in the AD, so the AEAD fails; the announcement never reaches Bob.
        let f = try fixture()
        let eve = try Identity(name: "Eve")
        let forged = try ForwardSecretEnvelope.seal(f.body, from: eve, to: f.bob.publicIdentity.encryptionKey,
                                                    receiverKey: f.receiver.key, announce: f.announcement,
                                                    messageID: f.messageID, timestamp: f.timestamp,
                                                    associatedData: f.headerAD)
        #expect(throws: YaOKError(.tampered)) { try open(f, forged) }
    }

    @Test func aForgedAnnouncementFailsTheSenderMAC() throws {
        // Eve puts Alice's key in the AD (the AEAD then opens: anyone can seal to a public
        // receiver key) to slip Bob an announcement of hers: only the static-static MAC,
        // which covers the announcement, stops it.
        let f = try fixture()
        let eve = try Identity(name: "Eve")
        let forged = try ForwardSecretEnvelope.seal(f.body, from: eve, to: f.bob.publicIdentity.encryptionKey,
                                                    receiverKey: f.receiver.key, announce: f.announcement,
                                                    messageID: f.messageID, timestamp: f.timestamp,
                                                    associatedData: f.headerAD, ephemeralSecret: f.ephemeral,
                                                    claimedSenderKey: f.alice.publicIdentity.encryptionKey)
        #expect(throws: YaOKError(.senderAuthFailed)) { try open(f, forged) }
    }
}
