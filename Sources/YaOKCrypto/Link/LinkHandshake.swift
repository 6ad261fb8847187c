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

    static let prologue = Array("YaOK-link-v1".utf8)

    private let xx: NoiseXX<LinkCertificate>
    public var role: LinkRole { xx.role }

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
        xx = try NoiseXX(role: role, prologue: Self.prologue, stepBase: 0, label: "handshake",
                         staticSecret: staticKey.secret, staticPublic: staticKey.publicKey,
                         payload: certificate.bytes, remotePayloadLength: LinkCertificate.length,
                         ephemeralSecret: ephemeralSecret, verify: Self.verified)
    }

    /// The initiator's m1 packet; nil for a responder, which waits for m1. Once only.
    public func start() throws -> [UInt8]? { try xx.start() }

    /// Takes the payload of a received handshake packet. Errors, after which the handshake
    /// is abandoned: `malformedPacket` (not the step expected, a wrong size, an all-zero
    /// X25519 output), `tampered` (a ciphertext fails its tag), `senderAuthFailed` (the
    /// certificate does not verify, or certifies another link key than the peer's static
    /// key), `closed` (the handshake is already over).
    public func receive(_ handshakePayload: [UInt8]) throws -> Output {
        let (packet, completion) = try xx.receive(handshakePayload)
        return Output(packet: packet, completion: completion.map { Completion(session: $0.session, remote: $0.remote) })
    }

    /// The peer's certificate must certify exactly the static key this handshake
    /// authenticated (§5.2 check 4).
    private static func verified(_ remoteStatic: [UInt8], _ payload: [UInt8]) throws -> LinkCertificate {
        let certificate = try LinkCertificate(decoding: payload)
        try certificate.verify(linkPublicKey: remoteStatic)
        return certificate
    }
}
