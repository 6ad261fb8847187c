import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The relay vectors of docs/PROTOCOL.md §8, checked against the code (and recomputed with
/// PyNaCl alone in bindings/python/tests/test_protocol_vectors.py).
@Suite struct RelayVectorTests {
    func vector(_ name: String) throws -> ProtocolVector {
        let found = try ProtocolVector.all().filter { $0.name == name }
        try #require(found.count == 1, "vector \(name) missing from docs/PROTOCOL.md")
        return found[0]
    }

    func identity(_ v: ProtocolVector, _ key: String) throws -> Identity {
        let idv = try vector(try v.string(key))
        return try Identity(name: try idv.string("display_name"), secrets: try SecureBytes(copying: try idv.hex("secrets")))
    }

    @Test func mailboxes() throws {
        let v = try vector("relay-mailbox")
        let (alice, bob) = (try identity(v, "sender"), try identity(v, "recipient"))
        let aliceSide = try RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey)
        let bobSide = try RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey)
        #expect(aliceSide.pairKey.withUnsafeBytes(Array.init) == (try v.hex("pair_key")))
        #expect(try aliceSide.outgoingMailbox().seed().withUnsafeBytes(Array.init) == (try v.hex("mailbox_seed")))
        #expect(try aliceSide.outgoingMailbox().publicKey == (try v.hex("mailbox_id")))
        #expect(try bobSide.incomingMailbox().publicKey == (try v.hex("mailbox_id")))
        #expect(try bobSide.outgoingMailbox().seed().withUnsafeBytes(Array.init) == (try v.hex("reverse_mailbox_seed")))
        #expect(try aliceSide.incomingMailbox().publicKey == (try v.hex("reverse_mailbox_id")))
    }

    @Test func login() throws {
        let v = try vector("relay-login")
        let pseudonym = try SigningKey(seed: SecureBytes(copying: try v.hex("pseudonym_seed")))
        #expect(pseudonym.publicKey == (try v.hex("pseudonym")))
        let (nonce, binding) = (try v.hex("nonce"), try v.hex("binding"))
        let auth = pseudonym.sign(RelaySignedData.auth(nonce: nonce, binding: binding))
        #expect(auth == (try v.hex("auth_signature")))
        #expect(RelayFrame.auth(pseudonym: pseudonym.publicKey, signature: auth).encode() == (try v.hex("auth_frame")))
        let mailbox = try SigningKey(seed: SecureBytes(copying: try v.hex("mailbox_seed")))
        let proof = mailbox.sign(RelaySignedData.subscribe(nonce: nonce, binding: binding, pseudonym: pseudonym.publicKey))
        #expect(proof == (try v.hex("subscribe_signature")))
        let frame = RelayFrame.subscribe([try MailboxProof(mailbox: MailboxID(bytes: mailbox.publicKey), signature: proof)])
        #expect(frame.encode() == (try v.hex("subscribe_frame")))
        #expect(try RelayFrame.decode(try v.hex("subscribe_frame")) == frame)
        // The relay's checks.
        #expect(SigningKey.verify(signature: auth, message: RelaySignedData.auth(nonce: nonce, binding: binding),
                                  publicKey: pseudonym.publicKey))
        #expect(!SigningKey.verify(signature: auth, message: RelaySignedData.auth(nonce: nonce, binding: [UInt8](repeating: 0x23, count: 32)),
                                   publicKey: pseudonym.publicKey))
    }
}
