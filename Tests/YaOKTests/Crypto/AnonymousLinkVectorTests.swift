import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The vectors of docs/PROTOCOL.md §5.10, which bindings/python/tests/test_link_privacy_vectors.py
/// recomputes independently (and with the noiseprotocol package).
@Suite struct AnonymousLinkVectorTests: VectorSuite {
    func payload(_ packet: [UInt8]?) throws -> [UInt8] {
        guard case .handshake(let payload)? = try packet.map({ try Packet.decode($0) }) else {
            throw YaOKError(.malformedPacket, "not a handshake packet")
        }
        return payload
    }

    @Test func anonymousHandshake() throws {
        let v = try vector("link-anon-handshake")
        let i = try AnonymousLinkHandshake(role: .initiator,
                                           staticSecret: try SecureBytes(copying: try v.hex("initiator_static_secret")),
                                           ephemeralSecret: try SecureBytes(copying: try v.hex("initiator_ephemeral_secret")))
        let r = try AnonymousLinkHandshake(role: .responder,
                                           staticSecret: try SecureBytes(copying: try v.hex("responder_static_secret")),
                                           ephemeralSecret: try SecureBytes(copying: try v.hex("responder_ephemeral_secret")))
        let m1 = try #require(try i.start())
        #expect(m1 == (try v.hex("m1")))
        let (m2, _) = try r.receive(try payload(m1))
        #expect(m2 == (try v.hex("m2")))
        let (m3, si) = try i.receive(try payload(m2))
        #expect(m3 == (try v.hex("m3")))
        let (_, sr) = try r.receive(try payload(m3))
        let a = try #require(si), b = try #require(sr)
        #expect(a.handshakeHash == (try v.hex("handshake_hash")))
        #expect(b.handshakeHash == a.handshakeHash)
        #expect(a.keyCopiesForTesting?.send == (try v.hex("initiator_to_responder_key")))
        #expect(a.keyCopiesForTesting?.receive == (try v.hex("responder_to_initiator_key")))
        #expect(b.keyCopiesForTesting?.send == (try v.hex("responder_to_initiator_key")))
    }

    func identity(_ name: String) throws -> Identity {
        let v = try vector(name)
        return try Identity(name: try v.string("display_name"), secrets: try SecureBytes(copying: try v.hex("secrets")))
    }

    @Test func contactRecognition() throws {
        let v = try vector("contact-recognition-alice-bob")
        let h = try vector(try v.string("handshake")).hex("handshake_hash")
        let alice = try identity(try v.string("initiator")), bob = try identity(try v.string("responder"))
        let aliceKey = try ContactLinkKey(own: alice, peer: bob.publicIdentity)
        let bobKey = try ContactLinkKey(own: bob, peer: alice.publicIdentity)
        #expect(aliceKey.key.copyBytes() == (try v.hex("contact_link_key")))
        #expect(bobKey.key.copyBytes() == aliceKey.key.copyBytes())
        for (name, role) in [("initiator", LinkRole.initiator), ("responder", .responder)] {
            let marker = aliceKey.mac(ContactRecognition.probeContext, role: role, handshakeHash: h)
            #expect(marker == (try v.hex("\(name)_marker")))
            #expect(ContactProbeBody.positions(marker).map(String.init).joined(separator: " ") == (try v.string("\(name)_positions")))
            #expect(aliceKey.mac(ContactRecognition.proofContext, role: role, handshakeHash: h) == (try v.hex("\(name)_proof")))
        }
        // The protocol run on this link: Alice's proof is what her recognition sends Bob.
        let ra = ContactRecognition(role: .initiator, handshakeHash: h, contacts: [aliceKey])
        let rb = ContactRecognition(role: .responder, handshakeHash: h, contacts: [bobKey])
        let bobProofs = try rb.receiveProbe(ra.probe().dropFirst())
        #expect(bobProofs == [[ContactRecognition.proofKind] + (try v.hex("responder_proof"))])
        let aliceReply = try ra.receiveProof(bobProofs[0].dropFirst())
        #expect(aliceReply == [[ContactRecognition.proofKind] + (try v.hex("initiator_proof"))])
        _ = try rb.receiveProof(aliceReply[0].dropFirst())
        #expect(ra.contact == bob.publicIdentity && rb.contact == alice.publicIdentity)
    }
}
