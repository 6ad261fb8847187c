import YaOKSupport
import YaOKWire
import YaOKCrypto

/// A link's secure channel: the Noise XX handshake (docs/PROTOCOL.md §5.2), then the
/// session that seals and opens link packets (§5.3). The one place the engine meets the
/// link crypto.
struct LinkChannel {
    private var handshake: LinkHandshake?
    private(set) var session: LinkSession?

    init(role: Link.Role, key: LinkKey, certificate: LinkCertificate) throws {
        handshake = try LinkHandshake(role: role, staticKey: key, certificate: certificate)
    }

    /// The initiator's first handshake packet (nil for a responder).
    func start() throws -> [UInt8]? {
        try handshake?.start()
    }

    /// A handshake packet's payload: the reply to send, if any, and the peer once done.
    mutating func receiveHandshake(_ payload: [UInt8]) throws -> (reply: [UInt8]?, peer: PublicIdentity?) {
        guard let h = handshake else { throw YaOKError(.linkFailed, "Handshake packet after the handshake completed") }
        let output = try h.receive(payload)
        if let done = output.completion {
            session = done.session
            handshake = nil
            return (output.packet, done.remote.identity)
        }
        return (output.packet, nil)
    }

    func seal(_ payload: LinkPayload) throws -> [UInt8] {
        guard let session else { throw YaOKError(.linkFailed, "The link is not open yet") }
        return try session.seal(payload)
    }

    func open(_ packet: [UInt8]) throws -> LinkPayload {
        guard let session else { throw YaOKError(.linkFailed, "Link packet before the handshake completed") }
        return try session.open(packet)
    }

    /// Forgets the link keys (wiped).
    func close() {
        session?.close()
    }
}
