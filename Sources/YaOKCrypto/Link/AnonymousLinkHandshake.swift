import YaOKSupport
import YaOKWire

/// The anonymous link handshake of docs/PROTOCOL.md §5.8: Noise_XX_25519_ChaChaPoly_BLAKE2b
/// with prologue "YaOK-link-v2", a fresh static key per link and empty payloads. Nothing in
/// it names the node: the static key is made for this link and forgotten with it, so a
/// stranger who completes it learns no identity, certificate or value seen on another link.
/// Who the peer is (if a contact) is settled afterwards, inside the session, by `ContactProbe`
/// and `ContactProof`, bound to the handshake hash.
///
/// Fixed sizes whoever the peers are: packets of 37, 101 and 69 bytes. Its steps are 0x11,
/// 0x12, 0x13 (§5.2's are 1, 2, 3), so a responder tells from m1 which handshake it is in.
///
/// Not thread-safe: a handshake belongs to one thread (the node's event thread).
public final class AnonymousLinkHandshake {
    static let prologue = Array("YaOK-link-v2".utf8)
    static let dhLength = 32
    /// Noise message lengths by step: e; e + enc(s) + enc(empty); enc(s) + enc(empty).
    static let messageLength: [UInt8: Int] = [1: 32, 2: 32 + 48 + 16, 3: 48 + 16]
    /// The step byte of message n is `stepBase + n`.
    public static let stepBase: UInt8 = 0x10

    private enum Phase { case notStarted, awaitingM1, awaitingM2, awaitingM3, complete, failed }

    public let role: LinkRole
    private var staticSecret: SecureBytes?
    private let staticPublic: [UInt8]
    private var ephemeralSecret: SecureBytes?
    private let ephemeralPublic: [UInt8]
    private var state: NoiseSymmetricState?
    private var remoteEphemeral: [UInt8] = []
    private var phase: Phase

    public convenience init(role: LinkRole) throws {
        let (s, _) = try Sodium.x25519KeyPair()
        let (e, _) = try Sodium.x25519KeyPair()
        try self.init(role: role, staticSecret: s, ephemeralSecret: e)
    }

    /// With given secrets: only for the test vectors.
    init(role: LinkRole, staticSecret: SecureBytes, ephemeralSecret: SecureBytes) throws {
        self.role = role
        self.staticSecret = staticSecret
        self.ephemeralSecret = ephemeralSecret
        staticPublic = try staticSecret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        ephemeralPublic = try ephemeralSecret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        let state = try NoiseSymmetricState(protocolName: LinkHandshake.protocolName)
        state.mixHash(Self.prologue)
        self.state = state
        phase = role == .initiator ? .notStarted : .awaitingM1
    }

    /// The initiator's m1 packet; nil for a responder. Once only.
    public func start() throws -> [UInt8]? {
        guard role == .initiator else { return nil }
        guard phase == .notStarted, let state else {
            throw YaOKError(.invalidArgument, "This handshake has already started")
        }
        state.mixHash(ephemeralPublic)
        let payload = try state.encryptAndHash([])
        phase = .awaitingM2
        return try Self.packet(step: 1, ephemeralPublic + payload)
    }

    /// Takes a handshake packet's payload; returns the packet to send (if any) and, once
    /// complete, the session. Errors as `LinkHandshake.receive` (`malformedPacket`,
    /// `tampered`, `closed`); there is no certificate, so no `senderAuthFailed`.
    public func receive(_ handshakePayload: [UInt8]) throws -> (packet: [UInt8]?, session: LinkSession?) {
        do {
            return try advance(handshakePayload)
        } catch {
            forgetSecrets()
            phase = .failed
            throw error
        }
    }

    private func advance(_ payload: [UInt8]) throws -> (packet: [UInt8]?, session: LinkSession?) {
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
        guard payload.first == Self.stepBase + expected, payload.count == 1 + length else {
            throw YaOKError(.malformedPacket, "Expected anonymous handshake step \(expected) of \(1 + length) bytes, got \(payload.count) bytes")
        }
        let message = Array(payload.dropFirst())
        switch expected {
        case 1:
            remoteEphemeral = message                                   // e
            state.mixHash(remoteEphemeral)
            _ = try state.decryptAndHash([])
            state.mixHash(ephemeralPublic)                              // e
            try mixDH(state, ephemeralSecret, remoteEphemeral)          // ee
            var m2 = ephemeralPublic + (try state.encryptAndHash(staticPublic))  // s
            try mixDH(state, staticSecret, remoteEphemeral)             // es
            m2 += try state.encryptAndHash([])
            phase = .awaitingM3
            return (try Self.packet(step: 2, m2), nil)
        case 2:
            remoteEphemeral = Array(message[0..<32])                    // e
            state.mixHash(remoteEphemeral)
            try mixDH(state, ephemeralSecret, remoteEphemeral)          // ee
            let remoteStatic = try state.decryptAndHash(Array(message[32..<80]))  // s
            try mixDH(state, ephemeralSecret, remoteStatic)             // es
            _ = try state.decryptAndHash(Array(message[80...]))         // empty payload
            var m3 = try state.encryptAndHash(staticPublic)             // s
            try mixDH(state, staticSecret, remoteEphemeral)             // se
            m3 += try state.encryptAndHash([])
            let packet = try Self.packet(step: 3, m3)
            return (packet, try complete(state))
        default:
            let remoteStatic = try state.decryptAndHash(Array(message[0..<48]))  // s
            try mixDH(state, ephemeralSecret, remoteStatic)             // se
            _ = try state.decryptAndHash(Array(message[48...]))
            return (nil, try complete(state))
        }
    }

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

    private func complete(_ state: NoiseSymmetricState) throws -> LinkSession {
        let (k1, k2) = try state.split()
        let session = role == .initiator
            ? LinkSession(sendKey: k1, receiveKey: k2, handshakeHash: state.handshakeHash)
            : LinkSession(sendKey: k2, receiveKey: k1, handshakeHash: state.handshakeHash)
        forgetSecrets()
        phase = .complete
        return session
    }

    /// The per-link static secret goes with the ephemeral one: it is never used again.
    private func forgetSecrets() {
        staticSecret = nil
        ephemeralSecret = nil
        state = nil
    }

    private static func packet(step: UInt8, _ message: [UInt8]) throws -> [UInt8] {
        try Packet.handshake(payload: [stepBase + step] + message).encode()
    }
}
