import YaOKSupport
import YaOKWire

/// The Noise XX pattern both link handshakes run (docs/PROTOCOL.md §5.2 and §5.8):
/// Noise_XX_25519_ChaChaPoly_BLAKE2b, token by token (-> e; <- e, ee, s, es; -> s, se), each
/// message in a handshake packet `step byte || Noise message`. What differs between the two
/// is data, not steps: the prologue, the step bytes, the static key and each side's payload
/// (a certificate, or nothing), and what is checked of the peer's. `verify` sees the peer's
/// static key and payload as soon as they are read (an initiator on m2, before it writes
/// m3) and returns what the caller keeps of the peer, or throws to abandon.
///
/// Any failure abandons the handshake: its secrets are wiped and every later call throws
/// `closed`. So is a completed one, whose secrets are wiped as soon as the keys are split.
/// Not thread-safe: a handshake belongs to one thread (the node's event thread).
final class NoiseXX<Remote> {
    struct Completion {
        let session: LinkSession
        let remote: Remote
    }

    static var protocolName: [UInt8] { Array("Noise_XX_25519_ChaChaPoly_BLAKE2b".utf8) }
    static var dhLength: Int { 32 }

    private enum Phase { case notStarted, awaitingM1, awaitingM2, awaitingM3, complete, failed }

    let role: LinkRole
    private let stepBase: UInt8
    private let label: String
    private var staticSecret: SecureBytes?
    private let staticPublic: [UInt8]
    private let payload: [UInt8]
    private let remotePayloadLength: Int
    private let verify: (_ remoteStatic: [UInt8], _ remotePayload: [UInt8]) throws -> Remote
    private var ephemeralSecret: SecureBytes?
    private let ephemeralPublic: [UInt8]
    private var state: NoiseSymmetricState?
    private var remoteEphemeral: [UInt8] = []
    private var phase: Phase

    /// `payload` is what this side sends in m2 or m3; the peer's must be `remotePayloadLength`
    /// bytes. `label` names the handshake in error messages.
    init(role: LinkRole, prologue: [UInt8], stepBase: UInt8, label: String,
         staticSecret: SecureBytes, staticPublic: [UInt8], payload: [UInt8], remotePayloadLength: Int,
         ephemeralSecret: SecureBytes,
         verify: @escaping (_ remoteStatic: [UInt8], _ remotePayload: [UInt8]) throws -> Remote) throws {
        self.role = role
        self.stepBase = stepBase
        self.label = label
        self.staticSecret = staticSecret
        self.staticPublic = staticPublic
        self.payload = payload
        self.remotePayloadLength = remotePayloadLength
        self.verify = verify
        self.ephemeralSecret = ephemeralSecret
        ephemeralPublic = try ephemeralSecret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        let state = try NoiseSymmetricState(protocolName: Self.protocolName)
        state.mixHash(prologue)
        self.state = state
        phase = role == .initiator ? .notStarted : .awaitingM1
    }

    /// Noise message length of step n: e; e + enc(s) + enc(payload); enc(s) + enc(payload).
    private func messageLength(_ step: UInt8) -> Int {
        let sealedStatic = Self.dhLength + 16, sealedPayload = remotePayloadLength + 16
        switch step {
        case 1: return Self.dhLength
        case 2: return Self.dhLength + sealedStatic + sealedPayload
        default: return sealedStatic + sealedPayload
        }
    }

    /// The initiator's m1 packet; nil for a responder, which waits for m1. Once only.
    func start() throws -> [UInt8]? {
        guard role == .initiator else { return nil }
        guard phase == .notStarted, let state else {
            throw YaOKError(.invalidArgument, "This handshake has already started")
        }
        state.mixHash(ephemeralPublic)                              // e
        let empty = try state.encryptAndHash([])                    // no key yet: hashed as is
        phase = .awaitingM2
        return try packet(step: 1, ephemeralPublic + empty)
    }

    /// Takes the payload of a received handshake packet; returns the packet to send (if any)
    /// and, once complete, the completion. Errors, after which the handshake is abandoned:
    /// `malformedPacket` (not the step expected, a wrong size, an all-zero X25519 output),
    /// `tampered` (a ciphertext fails its tag), what `verify` throws, `closed` (over).
    func receive(_ handshakePayload: [UInt8]) throws -> (packet: [UInt8]?, completion: Completion?) {
        do {
            return try advance(handshakePayload)
        } catch {
            forgetSecrets()
            phase = .failed
            throw error
        }
    }

    private func advance(_ bytes: [UInt8]) throws -> (packet: [UInt8]?, completion: Completion?) {
        let expected: UInt8
        switch phase {
        case .awaitingM1: expected = 1
        case .awaitingM2: expected = 2
        case .awaitingM3: expected = 3
        case .notStarted: throw YaOKError(.invalidArgument, "The initiator sends m1 (start()) before it receives")
        case .complete, .failed: throw YaOKError(.closed, "This handshake is over")
        }
        guard let state else { throw YaOKError(.closed, "This handshake is over") }
        let length = messageLength(expected)
        guard bytes.first == stepBase + expected, bytes.count == 1 + length else {
            throw YaOKError(.malformedPacket,
                            "Expected \(label) step \(expected) of \(1 + length) bytes, got \(bytes.count) bytes"
                                + (bytes.first.map { " of step \($0)" } ?? ""))
        }
        let message = Array(bytes.dropFirst())
        switch expected {
        case 1: return (try readM1WriteM2(message, state), nil)
        case 2: return try readM2WriteM3(message, state)
        default: return (nil, try readM3(message, state))
        }
    }

    private func readM1WriteM2(_ message: [UInt8], _ state: NoiseSymmetricState) throws -> [UInt8] {
        remoteEphemeral = message                                   // e
        state.mixHash(remoteEphemeral)
        _ = try state.decryptAndHash([])                            // the empty payload
        state.mixHash(ephemeralPublic)                              // e
        try mixDH(state, ephemeralSecret, remoteEphemeral)          // ee
        var m2 = ephemeralPublic + (try state.encryptAndHash(staticPublic))  // s
        try mixDH(state, staticSecret, remoteEphemeral)             // es
        m2 += try state.encryptAndHash(payload)
        phase = .awaitingM3
        return try packet(step: 2, m2)
    }

    private func readM2WriteM3(_ message: [UInt8], _ state: NoiseSymmetricState) throws -> ([UInt8]?, Completion?) {
        let sealedStaticEnd = Self.dhLength + Self.dhLength + 16
        remoteEphemeral = Array(message[0..<Self.dhLength])         // e
        state.mixHash(remoteEphemeral)
        try mixDH(state, ephemeralSecret, remoteEphemeral)          // ee
        let remoteStatic = try state.decryptAndHash(Array(message[Self.dhLength..<sealedStaticEnd]))  // s
        try mixDH(state, ephemeralSecret, remoteStatic)             // es
        let remote = try verify(remoteStatic, try state.decryptAndHash(Array(message[sealedStaticEnd...])))
        var m3 = try state.encryptAndHash(staticPublic)             // s
        try mixDH(state, staticSecret, remoteEphemeral)             // se
        m3 += try state.encryptAndHash(payload)
        let packet = try packet(step: 3, m3)
        return (packet, try complete(state, remote: remote))
    }

    private func readM3(_ message: [UInt8], _ state: NoiseSymmetricState) throws -> Completion {
        let sealedStaticEnd = Self.dhLength + 16
        let remoteStatic = try state.decryptAndHash(Array(message[0..<sealedStaticEnd]))  // s
        try mixDH(state, ephemeralSecret, remoteStatic)             // se
        let remote = try verify(remoteStatic, try state.decryptAndHash(Array(message[sealedStaticEnd...])))
        return try complete(state, remote: remote)
    }

    /// MixKey(DH(secret, publicKey)). An all-zero output (a low-order public key) is refused,
    /// or a peer could force a shared secret everybody knows.
    private func mixDH(_ state: NoiseSymmetricState, _ secret: SecureBytes?, _ publicKey: [UInt8]) throws {
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

    private func complete(_ state: NoiseSymmetricState, remote: Remote) throws -> Completion {
        let (k1, k2) = try state.split()
        let session = role == .initiator
            ? LinkSession(sendKey: k1, receiveKey: k2, handshakeHash: state.handshakeHash)
            : LinkSession(sendKey: k2, receiveKey: k1, handshakeHash: state.handshakeHash)
        forgetSecrets()
        phase = .complete
        return Completion(session: session, remote: remote)
    }

    /// The ephemeral secret, chaining key and handshake cipher key are in guarded memory held
    /// only here: dropping them frees them, and sodium_free wipes. The static secret goes too:
    /// the node's link key keeps its own copy, and a per-link key is never used again.
    private func forgetSecrets() {
        staticSecret = nil
        ephemeralSecret = nil
        state = nil
    }

    private func packet(step: UInt8, _ message: [UInt8]) throws -> [UInt8] {
        try Packet.handshake(payload: [stepBase + step] + message).encode()
    }
}
