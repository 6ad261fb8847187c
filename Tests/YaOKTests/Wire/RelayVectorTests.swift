import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The relay vectors of docs/PROTOCOL.md §8, checked against the code (and recomputed with
/// PyNaCl alone in bindings/python/tests/test_protocol_vectors.py).
@Suite struct RelayVectorTests: VectorSuite {
    @Test func mailboxes() throws {
        let v = try vector("relay-mailbox")
        let (alice, bob) = (try identity(v, "sender"), try identity(v, "recipient"))
        let aliceSide = try RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey)
        let bobSide = try RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey)
        #expect(aliceSide.pairKey.withUnsafeBytes(Array.init) == (try v.hex("pair_key")))
        let relay = try v.hex("relay_id")
        #expect(try aliceSide.outgoingMailbox(relay: relay).seed().withUnsafeBytes(Array.init) == (try v.hex("mailbox_seed")))
        #expect(try aliceSide.outgoingMailbox(relay: relay).publicKey == (try v.hex("mailbox_id")))
        #expect(try bobSide.incomingMailbox(relay: relay).publicKey == (try v.hex("mailbox_id")))
        #expect(try bobSide.outgoingMailbox(relay: relay).seed().withUnsafeBytes(Array.init) == (try v.hex("reverse_mailbox_seed")))
        #expect(try aliceSide.incomingMailbox(relay: relay).publicKey == (try v.hex("reverse_mailbox_id")))
    }

    @Test func login() throws {
        let v = try vector("relay-login")
        let pseudonym = try SigningKey(seed: SecureBytes(copying: try v.hex("pseudonym_seed")))
        #expect(pseudonym.publicKey == (try v.hex("pseudonym")))
        let (nonce, binding, relay) = (try v.hex("nonce"), try v.hex("binding"), try v.hex("relay_id"))
        #expect(RelayFrame.challenge(nonce: nonce, relay: relay).encode() == (try v.hex("challenge_frame")))
        #expect(try RelayFrame.decode(try v.hex("challenge_frame")) == .challenge(nonce: nonce, relay: relay))
        let auth = pseudonym.sign(RelaySignedData.auth(nonce: nonce, binding: binding))
        #expect(auth == (try v.hex("auth_signature")))
        #expect(RelayFrame.auth(pseudonym: pseudonym.publicKey, signature: auth).encode() == (try v.hex("auth_frame")))
        let mailbox = try SigningKey(seed: SecureBytes(copying: try v.hex("mailbox_seed")))
        let proof = mailbox.sign(RelaySignedData.subscribe(nonce: nonce, binding: binding, pseudonym: pseudonym.publicKey))
        #expect(proof == (try v.hex("subscribe_signature")))
        let frame = RelayFrame.subscribe([try MailboxProof(mailbox: MailboxID(bytes: mailbox.publicKey), signature: proof)])
        let head = try v.hex("subscribe_frame_head")
        let padded = head + [UInt8](repeating: 0, count: Int(try v.string("subscribe_frame_length"))! - head.count)
        #expect(frame.encode() == padded)
        #expect(try RelayFrame.decode(padded) == frame)
        // The relay's checks.
        #expect(SigningKey.verify(signature: auth, message: RelaySignedData.auth(nonce: nonce, binding: binding),
                                  publicKey: pseudonym.publicKey))
        #expect(!SigningKey.verify(signature: auth, message: RelaySignedData.auth(nonce: nonce, binding: [UInt8](repeating: 0x23, count: 32)),
                                   publicKey: pseudonym.publicKey))
    }

    @Test func postAndDelete() throws {
        let v = try vector("relay-post")
        let sender = try SigningKey(seed: SecureBytes(copying: try v.hex("mailbox_seed")))
        let box = try MailboxID(bytes: sender.publicKey)
        #expect(box.bytes == (try vector("relay-mailbox").hex("mailbox_id")))
        let packet = try vector(try v.string("packet")).hex("packet")
        let signature = sender.sign(RelaySignedData.post(packet: packet))
        #expect(signature == (try v.hex("post_signature")))
        let post = RelayFrame.post(request: 1, mailbox: box, signature: signature, packet: packet)
        #expect(post.encode() == (try v.hex("post_frame")))
        #expect(try RelayFrame.decode(try v.hex("post_frame")) == post)
        #expect(SigningKey.verify(signature: signature, message: RelaySignedData.post(packet: packet), publicKey: box.bytes))
        let ref = StoredPacketRef(mailbox: try MailboxID(bytes: try vector("relay-mailbox").hex("reverse_mailbox_id")),
                                  messageID: try MessageID(bytes: try v.hex("delete_message_id")))
        let head = try v.hex("delete_frame_head")
        let padded = head + [UInt8](repeating: 0, count: Int(try v.string("delete_frame_length"))! - head.count)
        #expect(RelayFrame.delete([ref]).encode() == padded)
        #expect(try RelayFrame.decode(padded) == .delete([ref]))
    }

    /// CARRY frames (§12.9): one §12.2 meeting payload after the frame type, both ways;
    /// decoded as strictly as on a link.
    @Test func carryFrames() throws {
        let v = try vector("relay-carry")
        let offer = try vector("carry-offer")
        let entry = CarryOffer(identity: try offer.hex("identity"), routingTag: RoutingTag(value: 0x0102030405060708),
                               copyBudget: 4, claimHash: try offer.hex("claim_hash"))
        #expect(RelayFrame.carry(.offer([entry])).encode() == (try v.hex("offer_frame")))
        #expect(try RelayFrame.decode(try v.hex("offer_frame")) == .carry(.offer([entry])))
        let taken = try vector("carry-taken")
        #expect(RelayFrame.carryFromRelay(.taken([try taken.hex("identity")])).encode() == (try v.hex("taken_frame")))
        #expect(try RelayFrame.decode(try v.hex("taken_frame")) == .carryFromRelay(.taken([try taken.hex("identity")])))
        for key in ["reject_budget", "reject_kind", "reject_trailing"] {
            #expect(throws: YaOKError.self) { try RelayFrame.decode(try v.hex(key)) }
        }
    }
}
