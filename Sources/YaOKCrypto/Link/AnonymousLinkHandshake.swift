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
    /// The step byte of message n is `stepBase + n`.
    public static let stepBase: UInt8 = 0x10

    private let xx: NoiseXX<Void>
    public var role: LinkRole { xx.role }

    public convenience init(role: LinkRole) throws {
        let (s, _) = try Sodium.x25519KeyPair()
        let (e, _) = try Sodium.x25519KeyPair()
        try self.init(role: role, staticSecret: s, ephemeralSecret: e)
    }

    /// With given secrets: only for the test vectors.
    init(role: LinkRole, staticSecret: SecureBytes, ephemeralSecret: SecureBytes) throws {
        xx = try NoiseXX(role: role, prologue: Self.prologue, stepBase: Self.stepBase, label: "anonymous handshake",
                         staticSecret: staticSecret,
                         staticPublic: try staticSecret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) },
                         payload: [], remotePayloadLength: 0, ephemeralSecret: ephemeralSecret,
                         verify: { _, _ in })
    }

    /// The initiator's m1 packet; nil for a responder. Once only.
    public func start() throws -> [UInt8]? { try xx.start() }

    /// Takes a handshake packet's payload; returns the packet to send (if any) and, once
    /// complete, the session. Errors as `LinkHandshake.receive` (`malformedPacket`,
    /// `tampered`, `closed`); there is no certificate, so no `senderAuthFailed`. The per-link
    /// static secret is wiped with the ephemeral one: it is never used again.
    public func receive(_ handshakePayload: [UInt8]) throws -> (packet: [UInt8]?, session: LinkSession?) {
        let (packet, completion) = try xx.receive(handshakePayload)
        return (packet, completion?.session)
    }
}
