import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// A node of docs/PROTOCOL.md §5.8–5.9: an identity, its contacts' link keys, and (only to
/// check that none of it leaks) the link key and certificate of §5.1.
private struct PrivateNode {
    let identity: Identity
    let linkKey: LinkKey
    let certificate: LinkCertificate
    var contacts: [ContactLinkKey] = []

    init(_ name: String) throws {
        identity = try Identity(name: name)
        linkKey = try LinkKey()
        certificate = try linkKey.certificate(signedBy: identity)
    }

    mutating func add(_ other: PrivateNode) throws {
        contacts.append(try ContactLinkKey(own: identity, peer: other.identity.publicIdentity))
    }

    /// Everything stable about this node: what a stranger must never see.
    var secretsAndIdentifiers: [[UInt8]] {
        [identity.publicIdentity.encryptionKey, identity.publicIdentity.signingKey, linkKey.publicKey,
         certificate.bytes, certificate.signature]
    }
}

/// One whole anonymous link plus recognition between two nodes, recording what each side receives.
private struct LinkRun {
    var toResponder: [[UInt8]] = []   // every byte string the responder receives
    var toInitiator: [[UInt8]] = []
    var initiatorContact: PublicIdentity?
    var responderContact: PublicIdentity?
    var sessions: (LinkSession, LinkSession)?
    var handshakeHash: [UInt8] = []

    init(_ i: PrivateNode, _ r: PrivateNode) throws {
        let hi = try AnonymousLinkHandshake(role: .initiator)
        let hr = try AnonymousLinkHandshake(role: .responder)
        let m1 = try #require(try hi.start())
        toResponder.append(m1)
        let (m2, none) = try hr.receive(try handshakePayload(m1))
        #expect(none == nil)
        toInitiator.append(try #require(m2))
        let (m3, si) = try hi.receive(try handshakePayload(m2))
        toResponder.append(try #require(m3))
        let (nothing, sr) = try hr.receive(try handshakePayload(m3))
        #expect(nothing == nil)
        let a = try #require(si), b = try #require(sr)
        #expect(m1.count == 37 && m2?.count == 101 && m3?.count == 69)
        #expect(a.handshakeHash == b.handshakeHash)
        sessions = (a, b)
        handshakeHash = a.handshakeHash

        let ri = ContactRecognition(role: .initiator, handshakeHash: a.handshakeHash, contacts: i.contacts)
        let rr = ContactRecognition(role: .responder, handshakeHash: b.handshakeHash, contacts: r.contacts)
        // Both probes at once; then proofs back and forth until quiet.
        var forResponder = [ri.probe()], forInitiator = [rr.probe()]
        #expect(forResponder[0].count == 1025 && forInitiator[0].count == 1025)
        var rounds = 0
        while !(forResponder.isEmpty && forInitiator.isEmpty), rounds < 8 {
            rounds += 1
            let (toR, toI) = (forResponder, forInitiator)
            forResponder = []; forInitiator = []
            for plaintext in toR {
                toResponder.append(plaintext)
                forInitiator += try Self.deliver(plaintext, to: rr)
            }
            for plaintext in toI {
                toInitiator.append(plaintext)
                forResponder += try Self.deliver(plaintext, to: ri)
            }
        }
        initiatorContact = ri.contact
        responderContact = rr.contact
    }

    static func deliver(_ plaintext: [UInt8], to recognition: ContactRecognition) throws -> [[UInt8]] {
        switch plaintext.first {
        case ContactRecognition.probeKind: return try recognition.receiveProbe(plaintext.dropFirst())
        case ContactRecognition.proofKind: return try recognition.receiveProof(plaintext.dropFirst())
        default: throw YaOKError(.unknownPacketType, "not a recognition payload")
        }
    }
}

private func windows(_ bytes: [UInt8], _ size: Int = 8) -> Set<[UInt8]> {
    guard bytes.count >= size else { return [] }
    return Set((0...(bytes.count - size)).map { Array(bytes[$0..<$0 + size]) })
}

/// The promises of §5.8–5.9: strangers learn nothing stable, contacts still find each other.
@Suite struct ContactRecognitionTests {
    @Test(arguments: [true, false])
    func aStrangerLearnsNoIdentityNorAnyStableValueFromEitherSide(nodeInitiates: Bool) throws {
        var node = try PrivateNode("Node")
        var stranger = try PrivateNode("Stranger")
        // Both have contacts of their own, so their probes carry real markers.
        for name in ["Carol", "Dave", "Erin"] {
            try node.add(try PrivateNode(name)); try stranger.add(try PrivateNode(name + "'"))
        }
        var received: [[[UInt8]]] = []
        for _ in 0..<2 {
            let run = nodeInitiates ? try LinkRun(node, stranger) : try LinkRun(stranger, node)
            #expect(run.initiatorContact == nil && run.responderContact == nil)
            let heard = nodeInitiates ? run.toResponder : run.toInitiator
            // Only probes reach the stranger after the handshake: no proof, no certificate.
            #expect(heard.count == 3 - (nodeInitiates ? 0 : 1))
            for bytes in heard {
                for value in node.secretsAndIdentifiers {
                    #expect(windows(bytes).isDisjoint(with: windows(value)), "a stranger received 8 bytes of the node's keys or certificate")
                }
            }
            received.append(heard.map { Array($0.dropFirst(5)) })   // without the handshake packet header
        }
        // Two links to the same node: no 8-byte string in common.
        let first = received[0].reduce(into: Set<[UInt8]>()) { $0.formUnion(windows($1)) }
        let second = received[1].reduce(into: Set<[UInt8]>()) { $0.formUnion(windows($1)) }
        #expect(first.isDisjoint(with: second))
    }

    @Test func twoStrangersStillCompleteAnEncryptedLink() throws {
        let run = try LinkRun(try PrivateNode("Anna"), try PrivateNode("Bert"))
        let (a, b) = try #require(run.sessions)
        let carried: [UInt8] = Array(repeating: 0x5a, count: 40)
        #expect(try b.open(try a.seal(.packet(carried))) == .packet(carried))
        #expect(try a.open(try b.seal(.keepalive)) == .keepalive)
        #expect(run.initiatorContact == nil && run.responderContact == nil)
    }

    @Test(arguments: [true, false])
    func twoContactsAuthenticateEachOtherEitherWay(aliceInitiates: Bool) throws {
        var alice = try PrivateNode("Alice"), bob = try PrivateNode("Bob")
        try alice.add(try PrivateNode("Carol")); try alice.add(bob)
        try bob.add(alice); try bob.add(try PrivateNode("Dave"))
        let run = aliceInitiates ? try LinkRun(alice, bob) : try LinkRun(bob, alice)
        let (forAlice, forBob) = aliceInitiates ? (run.initiatorContact, run.responderContact) : (run.responderContact, run.initiatorContact)
        #expect(forAlice == bob.identity.publicIdentity)
        #expect(forBob == alice.identity.publicIdentity)
    }

    @Test func aContactWhoseCardWeHoldButWhoDoesNotHoldOursLearnsNothing() throws {
        var alice = try PrivateNode("Alice")
        let bob = try PrivateNode("Bob")
        try alice.add(bob)
        for run in [try LinkRun(alice, bob), try LinkRun(bob, alice)] {
            #expect(run.initiatorContact == nil && run.responderContact == nil)
            // Bob received Alice's probe only: 2 handshake messages or 1, and one probe.
            #expect((run.toResponder + run.toInitiator).filter { $0.first == ContactRecognition.proofKind }.isEmpty)
        }
    }

    @Test func tamperedReflectedAndReplayedProofsFail() throws {
        var alice = try PrivateNode("Alice"), bob = try PrivateNode("Bob")
        try alice.add(bob); try bob.add(alice)
        let run = try LinkRun(alice, bob)
        let aliceProof = try #require(run.toResponder.first { $0.first == ContactRecognition.proofKind })
        let bobProof = try #require(run.toInitiator.first { $0.first == ContactRecognition.proofKind })

        // On a fresh recognition for the same link: tampered → SENDER_AUTH_FAILED.
        let fresh = { ContactRecognition(role: .responder, handshakeHash: run.handshakeHash, contacts: bob.contacts) }
        var tampered = aliceProof
        tampered[5] ^= 0x01
        #expect(failure { try fresh().receiveProof(tampered.dropFirst()) } == .senderAuthFailed)
        // Reflected: Bob's own proof sent back to Bob.
        #expect(failure { try fresh().receiveProof(bobProof.dropFirst()) } == .senderAuthFailed)
        // Replayed on another link (another handshake hash).
        let other = try LinkRun(try PrivateNode("Xavier"), try PrivateNode("Yara"))
        let elsewhere = ContactRecognition(role: .responder, handshakeHash: other.handshakeHash, contacts: bob.contacts)
        #expect(failure { try elsewhere.receiveProof(aliceProof.dropFirst()) } == .senderAuthFailed)
        // The genuine proof on its own link still verifies.
        let genuine = fresh()
        _ = try genuine.receiveProof(aliceProof.dropFirst())
        #expect(genuine.contact == alice.identity.publicIdentity)
    }

    @Test func hostileProbesAndProofsAreRefusedWithBoundedWork() throws {
        var node = try PrivateNode("Node")
        for i in 0..<300 { try node.add(try PrivateNode("C\(i)")) }   // beyond the probe's capacity
        let h = [UInt8](repeating: 7, count: 64)
        for length in [0, 1, 31, 33, 1023, 1025, 100_000] {
            let r = ContactRecognition(role: .initiator, handshakeHash: h, contacts: node.contacts)
            #expect(failure { try r.receiveProbe(Array(repeating: 0xff, count: length)[...]) } == .malformedPacket)
            #expect(failure { try r.receiveProof(Array(repeating: 0xff, count: length)[...]) } == .malformedPacket)
        }
        // A filter of all ones (which would match everything) is refused by its weight.
        let r = ContactRecognition(role: .initiator, handshakeHash: h, contacts: node.contacts)
        #expect(failure { try r.receiveProbe(Array(repeating: 0xff, count: 1024)[...]) } == .malformedPacket)
        // Our own probe holds 256 of 300 contacts and still has exactly half its bits set.
        let own = ContactRecognition(role: .responder, handshakeHash: h, contacts: node.contacts).probe()
        #expect(own.dropFirst().reduce(0) { $0 + $1.nonzeroBitCount } == ContactProbeBody.setBits)
        // A valid-looking probe is taken once; a second one is refused.
        let garbage = ContactRecognition(role: .responder, handshakeHash: h, contacts: []).probe()
        let proofs = try r.receiveProbe(garbage.dropFirst())
        #expect(proofs.count <= ContactRecognition.maxProofs)
        #expect(failure { try r.receiveProbe(garbage.dropFirst()) } == .malformedPacket)
        // Garbage proofs: each costs one pass over the contacts; after maxProofs they are refused unread.
        for i in 0..<ContactRecognition.maxProofs {
            #expect(failure { try r.receiveProof(Array(repeating: UInt8(i), count: 32)[...]) } == .senderAuthFailed)
        }
        #expect(failure { try r.receiveProof(Array(repeating: 9, count: 32)[...]) } == .malformedPacket)
    }

    @Test func hostileAnonymousHandshakeMessagesAbandonTheHandshake() throws {
        // Wrong sizes, wrong steps, and §5.2's m1 (step 1), which an anonymous responder does not take.
        for bad in [[], [0x11], [0x11] + Array(repeating: 0, count: 31), [0x11] + Array(repeating: 9, count: 33),
                    [0x12] + Array(repeating: 9, count: 32), [1] + Array(repeating: 9, count: 32),
                    Array(repeating: 0x11, count: 5000)] as [[UInt8]] {
            let r = try AnonymousLinkHandshake(role: .responder)
            #expect(failure { try r.receive(bad) } == .malformedPacket)
            #expect(failure { try r.receive(bad) } == .closed)
        }
        // A low-order ephemeral key (all zero) → MALFORMED_PACKET; a flipped m2 byte → TAMPERED.
        let r = try AnonymousLinkHandshake(role: .responder)
        #expect(failure { try r.receive([0x11] + Array(repeating: 0, count: 32)) } == .malformedPacket)
        let i = try AnonymousLinkHandshake(role: .initiator)
        let responder = try AnonymousLinkHandshake(role: .responder)
        var m2 = try handshakePayload(try responder.receive(try handshakePayload(try i.start())).packet)
        m2[50] ^= 1
        #expect(failure { try i.receive(m2) } == .tampered)
    }
}

/// The status `body` fails with; nil if it succeeds (or throws something else).
private func failure<T>(_ body: () throws -> T) -> YaOKError.Code? {
    do { _ = try body(); return nil } catch let error as YaOKError { return error.code } catch { return nil }
}
