import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// A node with what links need: an identity, a link key and its certificate.
struct LinkNode {
    let identity: Identity
    let key: LinkKey
    let certificate: LinkCertificate

    init(_ name: String) throws {
        identity = try Identity(name: name)
        key = try LinkKey()
        certificate = try key.certificate(signedBy: identity)
    }

    func handshake(_ role: LinkRole) throws -> LinkHandshake {
        try LinkHandshake(role: role, staticKey: key, certificate: certificate)
    }
}

func handshakePayload(_ packet: [UInt8]?) throws -> [UInt8] {
    guard case .handshake(let payload)? = try packet.map({ try Packet.decode($0) }) else {
        throw YaOKError(.malformedPacket, "not a handshake packet")
    }
    return payload
}

/// Runs a whole handshake; returns (initiator's completion, responder's completion).
func completeHandshake(_ initiator: LinkHandshake, _ responder: LinkHandshake) throws
    -> (LinkHandshake.Completion, LinkHandshake.Completion) {
    let m2 = try responder.receive(try handshakePayload(try initiator.start()))
    let afterM2 = try initiator.receive(try handshakePayload(m2.packet))
    let afterM3 = try responder.receive(try handshakePayload(afterM2.packet))
    guard let a = afterM2.completion, let b = afterM3.completion else {
        throw YaOKError(.internal, "handshake did not complete")
    }
    return (a, b)
}

/// The handshake's promises: both sides learn who the other is, and nobody else can pass
/// for either of them (docs/PROTOCOL.md §5.2, §5.6).
@Suite struct LinkHandshakeTests {
    @Test(arguments: [true, false])
    func fullHandshakeEitherWayAuthenticatesBothSides(aliceInitiates: Bool) throws {
        let alice = try LinkNode("Alice")
        let bob = try LinkNode("Bob")
        let (first, second) = aliceInitiates ? (alice, bob) : (bob, alice)
        let (i, r) = try completeHandshake(try first.handshake(.initiator), try second.handshake(.responder))
        #expect(i.remote.identity == second.identity.publicIdentity)
        #expect(r.remote.identity == first.identity.publicIdentity)
        #expect(i.session.handshakeHash == r.session.handshakeHash)
        #expect(i.session.handshakeHash.count == 64)
        let id = MessageID.random()
        for payload: LinkPayload in [.keepalive, .packet([1, 1, 7, 42]), .receipt([id, .random()])] {
            #expect(try r.session.open(try i.session.seal(payload)) == payload)
            #expect(try i.session.open(try r.session.seal(payload)) == payload)
        }
    }

    @Test func everyHandshakeMakesFreshKeys() throws {
        let alice = try LinkNode("Alice")
        let bob = try LinkNode("Bob")
        let (a1, b1) = try completeHandshake(try alice.handshake(.initiator), try bob.handshake(.responder))
        let (a2, b2) = try completeHandshake(try alice.handshake(.initiator), try bob.handshake(.responder))
        #expect(a1.session.handshakeHash != a2.session.handshakeHash)
        #expect(a1.session.keyCopiesForTesting?.send != a2.session.keyCopiesForTesting?.send)
        // A packet of one link means nothing on another link between the same two nodes.
        let packet = try a1.session.seal(.keepalive)
        #expect(errorCode { try b2.session.open(packet) } == .tampered)
        #expect(try b1.session.open(packet) == .keepalive)
    }

    @Test func aStrangerWithItsOwnValidCertificateIsNamedNotHidden() throws {
        // Policy about strangers belongs to the node; the handshake must say who they are.
        let alice = try LinkNode("Alice")
        let eve = try LinkNode("Eve")
        let (i, _) = try completeHandshake(try alice.handshake(.initiator), try eve.handshake(.responder))
        #expect(i.remote.identity == eve.identity.publicIdentity)
    }

    @Test func aCertificateSignedBySomeoneElseIsRefused() throws {
        // Eve claims Bob's identity for her link key; she can only sign with her own key.
        let alice = try LinkNode("Alice")
        let bob = try LinkNode("Bob")
        let eve = try LinkNode("Eve")
        let signed = LinkCertificate.signedBytes(linkPublicKey: eve.key.publicKey, identityKey: bob.identity.publicIdentity.encryptionKey)
        let forged = try LinkCertificate(decoding: bob.identity.publicIdentity.encryptionKey + bob.identity.publicIdentity.signingKey
                                         + eve.identity.sign(signed))
        #expect(!forged.certifies(linkPublicKey: eve.key.publicKey))
        #expect(errorCode { try LinkHandshake(role: .responder, staticKey: eve.key, certificate: forged) } == .invalidArgument)

        let impostor = try LinkHandshake(role: .responder, staticKey: eve.key, certificate: forged,
                                         ephemeralSecret: try SecureBytes.random(count: 32), checkingCertificate: false)
        let initiator = try alice.handshake(.initiator)
        let m2 = try impostor.receive(try handshakePayload(try initiator.start()))
        #expect(errorCode { try initiator.receive(try handshakePayload(m2.packet)) } == .senderAuthFailed)

        // The same forgery presented by an initiator, to Bob's node as responder.
        let impostorInitiator = try LinkHandshake(role: .initiator, staticKey: eve.key, certificate: forged,
                                                  ephemeralSecret: try SecureBytes.random(count: 32), checkingCertificate: false)
        let responder = try bob.handshake(.responder)
        let m2b = try responder.receive(try handshakePayload(try impostorInitiator.start()))
        let m3 = try impostorInitiator.receive(try handshakePayload(m2b.packet))
        #expect(errorCode { try responder.receive(try handshakePayload(m3.packet)) } == .senderAuthFailed)
    }

    @Test func aGenuineCertificateForAnotherLinkKeyIsRefused() throws {
        // Bob's real certificate, copied by someone who holds another link key (or by Bob's
        // own node after it made a new key without a new certificate).
        let alice = try LinkNode("Alice")
        let bob = try LinkNode("Bob")
        let otherKey = try LinkKey()
        #expect(!bob.certificate.certifies(linkPublicKey: otherKey.publicKey))
        let copied = try LinkHandshake(role: .responder, staticKey: otherKey, certificate: bob.certificate,
                                       ephemeralSecret: try SecureBytes.random(count: 32), checkingCertificate: false)
        let initiator = try alice.handshake(.initiator)
        let m2 = try copied.receive(try handshakePayload(try initiator.start()))
        #expect(errorCode { try initiator.receive(try handshakePayload(m2.packet)) } == .senderAuthFailed)

        let copiedInitiator = try LinkHandshake(role: .initiator, staticKey: otherKey, certificate: alice.certificate,
                                                ephemeralSecret: try SecureBytes.random(count: 32), checkingCertificate: false)
        let responder = try bob.handshake(.responder)
        let m2b = try responder.receive(try handshakePayload(try copiedInitiator.start()))
        let m3 = try copiedInitiator.receive(try handshakePayload(m2b.packet))
        #expect(errorCode { try responder.receive(try handshakePayload(m3.packet)) } == .senderAuthFailed)
    }

    @Test func everyChangedByteOfM2IsRefusedAndEndsTheHandshake() throws {
        let alice = try LinkNode("Alice")
        let bob = try LinkNode("Bob")
        var initiators: [LinkHandshake] = []
        var m1s: [[UInt8]] = []
        // One m2 per initiator: each tampered copy needs a fresh initiator (a failure ends one).
        let m2Length = 1 + 224
        for _ in 0..<m2Length {
            let initiator = try alice.handshake(.initiator)
            initiators.append(initiator)
            m1s.append(try handshakePayload(try initiator.start()))
        }
        for position in 0..<m2Length {
            let honest = try bob.handshake(.responder)
            var m2 = try handshakePayload(try honest.receive(m1s[position]).packet)
            m2[position] ^= 0x04
            let code = errorCode { try initiators[position].receive(m2) }
            // The step byte is checked first; the ephemeral key changes ee, so the static
            // key's tag fails; every other byte is inside a ciphertext.
            #expect(code == (position == 0 ? .malformedPacket : .tampered), "byte \(position)")
            #expect(errorCode { try initiators[position].receive(m2) } == .closed)
        }
    }

    @Test func everyChangedByteOfM3IsRefused() throws {
        let alice = try LinkNode("Alice")
        let bob = try LinkNode("Bob")
        for position in stride(from: 0, to: 1 + 192, by: 7) {
            let initiator = try alice.handshake(.initiator)
            let responder = try bob.handshake(.responder)
            let m2 = try responder.receive(try handshakePayload(try initiator.start()))
            var m3 = try handshakePayload(try initiator.receive(try handshakePayload(m2.packet)).packet)
            m3[position] ^= 0x80
            #expect(errorCode { try responder.receive(m3) } == (position == 0 ? .malformedPacket : .tampered), "byte \(position)")
        }
    }

    @Test func wrongSizesStepsAndLowOrderKeysAreMalformed() throws {
        let alice = try LinkNode("Alice")
        let bob = try LinkNode("Bob")
        let m1 = try handshakePayload(try alice.handshake(.initiator).start())
        #expect(m1.count == 33 && m1[0] == 1)
        for bad in [[], Array(m1.dropLast()), m1 + [0], [2] + m1.dropFirst(), [3] + m1.dropFirst()] {
            #expect(errorCode { try bob.handshake(.responder).receive(bad) } == .malformedPacket)
        }
        // An all-zero (low-order) ephemeral key would make ee a secret everybody knows.
        #expect(errorCode { try bob.handshake(.responder).receive([1] + [UInt8](repeating: 0, count: 32)) } == .malformedPacket)
        // An initiator expects m2, not another m1.
        let initiator = try alice.handshake(.initiator)
        _ = try initiator.start()
        #expect(errorCode { try initiator.receive(m1) } == .malformedPacket)
        #expect(errorCode { try initiator.start() } == .invalidArgument)
    }

    @Test func aReplayedHandshakeDoesNotReachTheSameKeys() throws {
        // An attacker records m1 and m3 of a real handshake and plays them to Bob again:
        // Bob answers with a fresh ephemeral key, so the recorded m3 no longer fits.
        let alice = try LinkNode("Alice")
        let bob = try LinkNode("Bob")
        let initiator = try alice.handshake(.initiator)
        let firstResponder = try bob.handshake(.responder)
        let m1 = try handshakePayload(try initiator.start())
        let m2 = try firstResponder.receive(m1)
        let m3 = try handshakePayload(try initiator.receive(try handshakePayload(m2.packet)).packet)
        _ = try firstResponder.receive(m3)

        let replayed = try bob.handshake(.responder)
        let m2again = try replayed.receive(m1)
        #expect(m2again.packet != m2.packet)
        #expect(errorCode { try replayed.receive(m3) } == .tampered)
    }
}
