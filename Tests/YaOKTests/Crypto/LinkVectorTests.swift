import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The link vectors of docs/PROTOCOL.md §5.7, which an independent Python implementation
/// (bindings/python/tests/noise_reference.py) and the noiseprotocol package recompute too.
@Suite struct LinkVectorTests: VectorSuite {
    /// The identity, link key and certificate of a `link-cert-*` vector.
    func party(_ name: String) throws -> (Identity, LinkKey, ProtocolVector) {
        let v = try vector(name)
        let owner = try vector(try v.string("identity"))
        let identity = try Identity(name: try owner.string("display_name"),
                                    secrets: try SecureBytes(copying: try owner.hex("secrets")))
        return (identity, try LinkKey(secret: try SecureBytes(copying: try v.hex("link_static_secret"))), v)
    }

    func handshakePayload(_ packet: [UInt8]) throws -> [UInt8] {
        guard case .handshake(let payload) = try Packet.decode(packet) else {
            Issue.record("not a handshake packet")
            return []
        }
        return payload
    }

    struct Run {
        let m1, m2, m3: [UInt8]
        let initiator, responder: LinkHandshake.Completion
    }

    func runHandshake(_ v: ProtocolVector) throws -> Run {
        let (alice, aliceKey, _) = try party(try v.string("initiator"))
        let (bob, bobKey, _) = try party(try v.string("responder"))
        let initiator = try LinkHandshake(role: .initiator, staticKey: aliceKey, certificate: try aliceKey.certificate(signedBy: alice),
                                          ephemeralSecret: try SecureBytes(copying: try v.hex("initiator_ephemeral_secret")))
        let responder = try LinkHandshake(role: .responder, staticKey: bobKey, certificate: try bobKey.certificate(signedBy: bob),
                                          ephemeralSecret: try SecureBytes(copying: try v.hex("responder_ephemeral_secret")))
        #expect(try responder.start() == nil)
        let m1 = try #require(try initiator.start())
        let m2 = try #require(try responder.receive(try handshakePayload(m1)).packet)
        let afterM2 = try initiator.receive(try handshakePayload(m2))
        let m3 = try #require(afterM2.packet)
        let afterM3 = try responder.receive(try handshakePayload(m3))
        #expect(afterM3.packet == nil)
        return Run(m1: m1, m2: m2, m3: m3, initiator: try #require(afterM2.completion),
                   responder: try #require(afterM3.completion))
    }

    @Test(arguments: ["link-cert-alice", "link-cert-bob"])
    func certificates(name: String) throws {
        let (identity, key, v) = try party(name)
        #expect(key.publicKey == (try v.hex("link_static_public")))
        let certificate = try key.certificate(signedBy: identity)
        #expect(certificate.bytes == (try v.hex("certificate")))
        let decoded = try LinkCertificate(decoding: try v.hex("certificate"))
        #expect(decoded == certificate)
        #expect(decoded.identity == identity.publicIdentity)
        #expect(decoded.certifies(linkPublicKey: key.publicKey))
    }

    @Test func handshake() throws {
        let v = try vector("link-handshake-alice-bob")
        let run = try runHandshake(v)
        #expect(run.m1 == (try v.hex("m1")))
        #expect(run.m2 == (try v.hex("m2")))
        #expect(run.m3 == (try v.hex("m3")))
        #expect([run.m1.count, run.m2.count, run.m3.count] == [37, 229, 197])
        #expect(run.initiator.session.handshakeHash == (try v.hex("handshake_hash")))
        #expect(run.responder.session.handshakeHash == (try v.hex("handshake_hash")))
        let k1 = try v.hex("initiator_to_responder_key")
        let k2 = try v.hex("responder_to_initiator_key")
        let initiatorKeys = try #require(run.initiator.session.keyCopiesForTesting)
        let responderKeys = try #require(run.responder.session.keyCopiesForTesting)
        #expect(initiatorKeys.send == k1 && initiatorKeys.receive == k2)
        #expect(responderKeys.send == k2 && responderKeys.receive == k1)
        #expect(run.initiator.remote.bytes == (try vector("link-cert-bob").hex("certificate")))
        #expect(run.responder.remote.bytes == (try vector("link-cert-alice").hex("certificate")))
    }

    /// Each link packet vector, sealed by its sender at its counter and opened by its
    /// receiver. Counters below a vector's are spent on throwaway packets, and the receiver
    /// sees only the vectors: the gaps are lost packets, which it must tolerate.
    @Test func linkPackets() throws {
        let run = try runHandshake(try vector("link-handshake-alice-bob"))
        for name in ["link-packet-carried", "link-packet-keepalive", "link-packet-receipt"] {
            let v = try vector(name)
            let towardsResponder = try v.string("direction") == "initiator-to-responder"
            let sender = towardsResponder ? run.initiator.session : run.responder.session
            let receiver = towardsResponder ? run.responder.session : run.initiator.session
            let body = try v.hex("body")
            let payload: LinkPayload
            switch try v.hex("kind") {
            case [0x01]: payload = .packet(body)
            case [0x02]: payload = .receipt(try stride(from: 1, to: body.count, by: 16).map { try MessageID(bytes: body[$0..<$0 + 16]) })
            case [0x03]: payload = .keepalive
            default: Issue.record("unknown kind in \(name)"); continue
            }
            let counter = try v.uint64("counter")
            while sender.nextSendCounter < counter { _ = try sender.seal(.keepalive) }
            let packet = try sender.seal(payload)
            #expect(packet == (try v.hex("packet")), "\(name)")
            #expect(try Packet.decode(packet) == .link(counter: counter, ciphertext: Array(packet[12...])))
            #expect(try receiver.open(packet) == payload, "\(name)")
        }
        let carried = try vector("link-packet-carried").hex("body")
        #expect(carried == (try vector("wire-routed-message").hex("packet")))
    }

    /// HMAC-BLAKE2b is built by hand (libsodium has none). Keys of every length class, and
    /// data in two parts: the values are Python's `hmac.new(key, b"YaOK", hashlib.blake2b)`.
    @Test(arguments: [
        (3, "fdd50450c38621a1e4774a2a6e01095c77b43062e54f9bbfd808806d5d73ceac4b4c2292c525cf3ebd15e941a3d4a7221812539351c0345317209f2cca870bb8"),
        (200, "b8918a5c1db61454d749650e446cb904185cd410d5410fd8b0a0211bcbbbff1bd8f50a1da8cae917a06f12e3c4427d52dc8f4687fb75102e892d1ebbda256621"),
    ])
    func hmacBLAKE2b(keyLength: Int, expected: String) throws {
        let key = (0..<keyLength).map { UInt8($0 % 256) }
        let (first, second) = (Array("Ya".utf8), Array("OK".utf8))
        let mac = key.withUnsafeBytes { k in
            first.withUnsafeBytes { a in second.withUnsafeBytes { Sodium.hmacBLAKE2b512(key: k, [a, $0]) } }
        }
        #expect(Hex.encode(mac) == expected)
    }
}
