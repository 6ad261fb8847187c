import YaOKSupport
import YaOKWire

/// One side of a link handshake (docs/PROTOCOL.md §5.2): Noise_XX_25519_ChaChaPoly_BLAKE2b
/// with prologue "YaOK-link-v1", static keys are link keys, and each side's payload is its
/// link certificate, which must certify exactly the static key the handshake authenticated.
///
///     initiator                                responder
///     start() → m1  ───────────────────────▶   receive(m1) → m2
///     receive(m2) → m3 + completion  ◀───────
///                   ───────────────────────▶   receive(m3) → completion
///
/// `receive` takes the payload of a handshake packet (`Packet.handshake(payload:)`) and
/// returns encoded handshake packets to send. Any failure abandons the handshake: its
/// secrets are wiped and every later call throws `closed`. So is a completed one, whose
/// secrets are wiped as soon as the session keys are split off.
///
/// Not thread-safe: a handshake belongs to one thread (the node's event thread).
public final class LinkHandshake {
    public struct Completion {
        public let session: LinkSession
        /// The other node's certificate, verified for the link key this handshake
        /// authenticated: `remote.identity` is who is at the other end.
        public let remote: LinkCertificate
    }

    public struct Output {
        /// An encoded handshake packet to send to the peer, if any.
        public let packet: [UInt8]?
        /// Set once this side has completed. An initiator gets m3 and its completion
        /// together: it may still decide not to send m3 (and so not to reveal its identity)
        /// to the responder it now knows, by closing the session instead.
        public let completion: Completion?
    }

    static let protocolName = Array("Noise_XX_25519_ChaChaPoly_BLAKE2b".utf8)
    static let prologue = Array("YaOK-link-v1".utf8)
    static let dhLength = 32
    /// Noise message lengths by step: e; e + enc(s) + enc(certificate); enc(s) + enc(certificate).
    static let messageLength: [UInt8: Int] = [
        1: dhLength,
        2: dhLength + (dhLength + 16) + (LinkCertificate.length + 16),
        3: (dhLength + 16) + (LinkCertificate.length + 16),
    ]

    private enum Phase {
        case notStarted, awaitingM1, awaitingM2, awaitingM3, complete, failed
    }

    public let role: LinkRole
    private let staticKey: LinkKey
    private let certificate: LinkCertificate
    private var ephemeralSecret: SecureBytes?
    private let ephemeralPublic: [UInt8]
    private var state: NoiseSymmetricState?
    private var remoteEphemeral: [UInt8] = []
    private var phase: Phase

    /// `certificate` must certify `staticKey` (else `invalidArgument`): the peer would
    /// refuse it anyway, after work on both sides.
    public convenience init(role: LinkRole, staticKey: LinkKey, certificate: LinkCertificate) throws {
        let (secret, _) = try Sodium.x25519KeyPair()
        try self.init(role: role, staticKey: staticKey, certificate: certificate, ephemeralSecret: secret)
    }

    /// With a given ephemeral secret: only for the test vectors, which must be reproducible.
    /// `checkingCertificate: false` lets a test play a dishonest peer, whose certificate the
    /// other side must refuse.
    init(role: LinkRole, staticKey: LinkKey, certificate: LinkCertificate, ephemeralSecret: SecureBytes,
         checkingCertificate: Bool = true) throws {
        guard !checkingCertificate || certificate.certifies(linkPublicKey: staticKey.publicKey) else {
            throw YaOKError(.invalidArgument, "The link certificate does not certify this link key")
        }
        self.role = role
        self.staticKey = staticKey
        self.certificate = certificate
        self.ephemeralSecret = ephemeralSecret
        ephemeralPublic = try ephemeralSecret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        let state = try NoiseSymmetricState(protocolName: Self.protocolName)
        state.mixHash(Self.prologue)
        self.state = state
        phase = role == .initiator ? .notStarted : .awaitingM1
    }

    /// The initiator's m1 packet; nil for a responder, which waits for m1. Once only.
    public func start() throws -> [UInt8]? {
        guard role == .initiator else { return nil }
        guard phase == .notStarted, let state else {
            throw YaOKError(.invalidArgument, "This handshake has already started")
        }
        state.mixHash(ephemeralPublic)                              // e
        let payload = try state.encryptAndHash([])                  // no key yet: hashed as is
        phase = .awaitingM2
        return try Self.packet(step: 1, ephemeralPublic + payload)
    }

    /// Takes the payload of a received handshake packet. Errors, after which the handshake
    /// is abandoned: `malformedPacket` (not the step expected, a wrong size, an all-zero
    /// X25519 output), `tampered` (a ciphertext fails its tag), `senderAuthFailed` (the
    /// certificate does not verify, or certifies another link key than the peer's static
    /// key), `closed` (the handshake is already over).
    public func receive(_ handshakePayload: [UInt8]) throws -> Output {
        do {
            return try advance(handshakePayload)
        } catch {
            abandon()
            throw error
        }
    }

    private func advance(_ payload: [UInt8]) throws -> Output {
        let expected: UInt8
        switch phase {
        case .awaitingM1: expected = 1
        case .awaitingM2: expected = 2
        case .awaitingM3: expected = 3
        case .notStarted: throw YaOKError(.invalidArgument, "The initiator sends m1 (start()) before it receives")
        case .complete, .failed: throw YaOKError(.closed, "This handshake is over")
        }
        guard let state else { throw YaOKError(.closed, "This handshake is over") }
        let length = Self.messageLength[expected] ?? 0
        guard payload.first == expected, payload.count == 1 + length else {
            throw YaOKError(.malformedPacket,
                            "Expected handshake step \(expected) of \(1 + length) bytes, got \(payload.count) bytes"
                                + (payload.first.map { " of step \($0)" } ?? ""))
        }
        let message = Array(payload.dropFirst())
        switch expected {
        case 1: return try readM1WriteM2(message, state)
        case 2: return try readM2WriteM3(message, state)
        default: return try readM3(message, state)
        }
    }

    // Token by token, as in Noise's XX: -> e; <- e, ee, s, es; -> s, se.

    private func readM1WriteM2(_ message: [UInt8], _ state: NoiseSymmetricState) throws -> Output {
        remoteEphemeral = message                                   // e
        state.mixHash(remoteEphemeral)
        _ = try state.decryptAndHash([])                            // the empty payload
        state.mixHash(ephemeralPublic)                              // e
        try mixDH(state, secret: ephemeralSecret, remoteEphemeral)  // ee
        var m2 = ephemeralPublic + (try state.encryptAndHash(staticKey.publicKey))  // s
        try mixDH(state, secret: staticKey.secret, remoteEphemeral) // es
        m2 += try state.encryptAndHash(certificate.bytes)
        phase = .awaitingM3
        return Output(packet: try Self.packet(step: 2, m2), completion: nil)
    }

    private func readM2WriteM3(_ message: [UInt8], _ state: NoiseSymmetricState) throws -> Output {
        remoteEphemeral = Array(message[0..<32])                    // e
        state.mixHash(remoteEphemeral)
        try mixDH(state, secret: ephemeralSecret, remoteEphemeral)  // ee
        let remoteStatic = try state.decryptAndHash(Array(message[32..<80]))  // s
        try mixDH(state, secret: ephemeralSecret, remoteStatic)     // es
        let remote = try Self.verified(try state.decryptAndHash(Array(message[80...])), for: remoteStatic)
        var m3 = try state.encryptAndHash(staticKey.publicKey)      // s
        try mixDH(state, secret: staticKey.secret, remoteEphemeral) // se
        m3 += try state.encryptAndHash(certificate.bytes)
        let packet = try Self.packet(step: 3, m3)
        return Output(packet: packet, completion: try complete(state, remote: remote))
    }

    private func readM3(_ message: [UInt8], _ state: NoiseSymmetricState) throws -> Output {
        let remoteStatic = try state.decryptAndHash(Array(message[0..<48]))  // s
        try mixDH(state, secret: ephemeralSecret, remoteStatic)     // se
        let remote = try Self.verified(try state.decryptAndHash(Array(message[48...])), for: remoteStatic)
        return Output(packet: nil, completion: try complete(state, remote: remote))
    }

    /// MixKey(DH(secret, publicKey)). An all-zero output (a low-order public key) is refused,
    /// or a peer could force a shared secret everybody knows.
    private func mixDH(_ state: NoiseSymmetricState, secret: SecureBytes?, _ publicKey: [UInt8]) throws {
        guard let secret else { throw YaOKError(.closed, "This handshake is over") }
        var shared: [UInt8]
        do {
            shared = try secret.withUnsafeBytes { try Sodium.x25519(secret: $0, publicKey: publicKey) }
        } catch {
            throw YaOKError(.malformedPacket, "Handshake key is not a usable X25519 public key (all-zero shared secret)")
        }
        defer { Sodium.wipe(&shared) }
        state.mixKey(shared)
    }

    private static func verified(_ payload: [UInt8], for remoteStatic: [UInt8]) throws -> LinkCertificate {
        let certificate = try LinkCertificate(decoding: payload)
        try certificate.verify(linkPublicKey: remoteStatic)
        return certificate
    }

    private func complete(_ state: NoiseSymmetricState, remote: LinkCertificate) throws -> Completion {
        let (k1, k2) = try state.split()
        let session = role == .initiator
            ? LinkSession(sendKey: k1, receiveKey: k2, handshakeHash: state.handshakeHash)
            : LinkSession(sendKey: k2, receiveKey: k1, handshakeHash: state.handshakeHash)
        forgetSecrets()
        phase = .complete
        return Completion(session: session, remote: remote)
    }

    private func abandon() {
        forgetSecrets()
        phase = .failed
    }

    /// The ephemeral secret, chaining key and handshake cipher key are in guarded memory
    /// held only here: dropping them frees them, and sodium_free wipes.
    private func forgetSecrets() {
        ephemeralSecret = nil
        state = nil
    }

    private static func packet(step: UInt8, _ message: [UInt8]) throws -> [UInt8] {
        try Packet.handshake(payload: [step] + message).encode()
    }
}
