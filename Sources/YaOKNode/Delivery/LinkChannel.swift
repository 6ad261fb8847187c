import YaOKSupport
import YaOKWire
import YaOKCrypto

/// A link's secure channel: the anonymous Noise XX handshake with a fresh static key per link
/// (docs/PROTOCOL.md §5.8), then the session that seals and opens link packets (§5.3), then
/// contact recognition inside it (§5.9). The one place the engine meets the link crypto.
/// Nothing here names the node to the peer: its identity is proven only to a contact, by a
/// proof only that contact can check.
struct LinkChannel {
    private var handshake: AnonymousLinkHandshake?
    private(set) var session: LinkSession?
    /// Set when the handshake completes (the link is ready); settles who the peer is.
    private(set) var recognition: ContactRecognition?

    init(role: Link.Role) throws {
        handshake = try AnonymousLinkHandshake(role: role)
    }

    /// The initiator's first handshake packet (nil for a responder).
    func start() throws -> [UInt8]? {
        try handshake?.start()
    }

    /// A handshake packet's payload: the reply to send, if any, and whether the handshake
    /// completed with it. On completion, `contacts` (the contact link keys, §5.9) are bound
    /// to this link's handshake hash for recognition.
    mutating func receiveHandshake(_ payload: [UInt8], contacts: () -> [ContactLinkKey]) throws -> (reply: [UInt8]?, ready: Bool) {
        guard let h = handshake else { throw YaOKError(.linkFailed, "Handshake packet after the handshake completed") }
        let output = try h.receive(payload)
        if let done = output.session {
            session = done
            handshake = nil
            recognition = ContactRecognition(role: h.role, handshakeHash: done.handshakeHash, contacts: contacts())
            return (output.packet, true)
        }
        return (output.packet, false)
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
