import YaOKSupport
import YaOKWire

/// The encrypted session a completed `LinkHandshake` leaves (docs/PROTOCOL.md §5.3): one key
/// per direction, explicit counters so that lost packets do no harm, replays and reordered
/// packets refused. `close()` wipes both keys; so does releasing the object.
///
/// Not thread-safe: a link belongs to one thread (the node's event thread).
public final class LinkSession {
    /// The handshake's final hash: the same on both sides, unique to this link.
    public let handshakeHash: [UInt8]
    private var sendKey: SecureBytes?
    private var receiveKey: SecureBytes?
    /// Internal, not private, so that a test can jump to the end of the counter space.
    var nextSendCounter: UInt64 = 0
    private var lastReceivedCounter: UInt64?

    init(sendKey: SecureBytes, receiveKey: SecureBytes, handshakeHash: [UInt8]) {
        self.sendKey = sendKey
        self.receiveKey = receiveKey
        self.handshakeHash = handshakeHash
    }

    public var isClosed: Bool { sendKey == nil }

    /// Copies of both keys in ordinary memory, only for the tests that compare them with
    /// docs/PROTOCOL.md's vectors.
    var keyCopiesForTesting: (send: [UInt8], receive: [UInt8])? {
        guard let sendKey, let receiveKey else { return nil }
        return (sendKey.copyBytes(), receiveKey.copyBytes())
    }

    /// Forgets both keys now: guarded memory is wiped as it is freed (sodium_free), and
    /// this object holds the only references. Idempotent.
    public func close() {
        sendKey = nil
        receiveKey = nil
    }

    /// The encoded link packet carrying `payload`, under the next counter. `closed` once
    /// closed, and when the counter would reach 2^64 − 1: the link is then closed here and a
    /// new handshake is needed (a counter is never reused under one key).
    public func seal(_ payload: LinkPayload) throws -> [UInt8] {
        guard let key = sendKey else { throw YaOKError(.closed, "The link is closed") }
        guard nextSendCounter < UInt64.max else {
            close()
            throw YaOKError(.closed, "The link's counter is exhausted: handshake again")
        }
        let plaintext = try payload.encode()
        let counter = nextSendCounter
        let header = try Packet.linkHeader(counter: counter, ciphertextLength: plaintext.count + Sodium.chacha20Poly1305TagLength)
        let ciphertext = try key.withUnsafeBytes {
            try Sodium.chacha20Poly1305Encrypt(key: $0, nonce: NoiseSymmetricState.nonce(counter), ad: header, plaintext: plaintext)
        }
        nextSendCounter += 1
        return header + ciphertext
    }

    /// Opens an encoded link packet. See `open(counter:ciphertext:)`.
    public func open(_ packet: [UInt8]) throws -> LinkPayload {
        guard case .link(let counter, let ciphertext) = try Packet.decode(packet) else {
            throw YaOKError(.malformedPacket, "Not a link packet")
        }
        return try open(counter: counter, ciphertext: ciphertext)
    }

    /// Opens a decoded link packet, checking in the order of §5.3: counter 2^64 − 1 →
    /// `malformedPacket`; a counter not above the last accepted one → `expired` (replayed or
    /// reordered, refused before any decryption); a bad tag → `tampered`. An authentic
    /// packet spends its counter even when its payload is then refused (`malformedPacket`,
    /// `unknownPacketType`). Every failure drops this packet only; the session stays usable.
    public func open(counter: UInt64, ciphertext: [UInt8]) throws -> LinkPayload {
        guard let key = receiveKey else { throw YaOKError(.closed, "The link is closed") }
        guard counter < UInt64.max else {
            throw YaOKError(.malformedPacket, "Link counter 2^64-1 is never used")
        }
        if let last = lastReceivedCounter, counter <= last {
            throw YaOKError(.expired, "Link packet replayed or out of order: counter \(counter), last accepted \(last)")
        }
        let header = try Packet.linkHeader(counter: counter, ciphertextLength: ciphertext.count)
        let plaintext = try key.withUnsafeBytes {
            try Sodium.chacha20Poly1305Decrypt(key: $0, nonce: NoiseSymmetricState.nonce(counter), ad: header, ciphertext: ciphertext)
        }
        lastReceivedCounter = counter
        return try LinkPayload.decode(plaintext)
    }
}
