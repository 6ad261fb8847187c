import YaOKSupport
import YaOKWire

/// The forward-secret packet envelope (docs/PROTOCOL.md §13.2): the packet envelope of §3.1
/// sealed to one of the recipient's receiver keys `K` instead of its long-term key, and
/// carrying the sender's newest receiver key for the recipient (`announce`) under the sender MAC.
///
///     selector = BLAKE2b-32(key = "YaOK-rk-select-v1"; K || E)
///     AD       = 0x03 || S || R || K || message ID || timestamp (u64) || E || header_ad
///     es       = X25519(e, K); okm = BLAKE2b-512(key = "YaOK-envelope-v3"; es || E || K)
///     auth     = BLAKE2b-128(key = auth_key(S, R); AD || announce || body)
///     sealed   = selector || E || XChaCha20-Poly1305(key, nonce, AD, auth || announce || padded)
///
/// Once the recipient erases K's secret, no copy of a message sealed to it opens, whatever
/// else is seized: the long-term key only authenticates (the sender MAC), it decrypts nothing.
public enum ForwardSecretEnvelope {
    static let version: UInt8 = 3
    static let keyKey = Array("YaOK-envelope-v3".utf8)
    static let selectorKey = Array("YaOK-rk-select-v1".utf8)
    static let selectorLength = 4
    /// Bytes added to the padded body: selector (4) || E (32) || auth (16) || announce (40) ||
    /// AEAD tag (16) = 108, 44 more than the packet envelope (§3.1).
    public static let overhead = selectorLength + Envelope.ephemeralLength + Envelope.authLength
        + Announcement.encodedLength + Envelope.tagLength
    public static let minLength = overhead + Padding.buckets[0]

    /// What opening yields: the body, the sender's announced receiver key, and which of the
    /// recipient's receiver keys opened it (the store learns from this that the sender has
    /// heard of that key, §13.3).
    public struct Opened: Sendable {
        public let body: [UInt8]
        public let announced: Announcement
        public let openedWith: UInt32
    }

    public static func sealedLength(bodyLength: Int) throws -> Int {
        try Envelope.sealedLength(bodyLength: bodyLength) - Envelope.overhead + overhead
    }

    /// Seals `body` from `sender` (long-term key pair, for the MAC) to `recipientKey` (the
    /// recipient's long-term public key) under `receiverKey` (its newest receiver key the
    /// sender knows), announcing `announce` (the sender's newest receiver key for it).
    public static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8], receiverKey: ReceiverKey,
                            announce: Announcement, messageID: [UInt8], timestamp: Int64,
                            associatedData: [UInt8]) throws -> [UInt8] {
        try SecureScratch.withRandom(count: 32) { ephemeral in
            try seal(body, from: sender, to: recipientKey, receiverKey: receiverKey, announce: announce,
                     messageID: messageID, timestamp: timestamp, associatedData: associatedData, ephemeral: ephemeral)
        }
    }

    /// With a given ephemeral secret: only for test vectors; and for forgery tests
    /// (`claimedSenderKey`: another key than the sender's in the AD and the MAC input, the
    /// MAC still made with the sender's secret).
    static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8], receiverKey: ReceiverKey,
                     announce: Announcement, messageID: [UInt8], timestamp: Int64, associatedData extra: [UInt8],
                     ephemeralSecret secret: [UInt8], claimedSenderKey: [UInt8]? = nil) throws -> [UInt8] {
        try seal(body, from: sender, to: recipientKey, receiverKey: receiverKey, announce: announce,
                 messageID: messageID, timestamp: timestamp, associatedData: extra,
                 ephemeral: try SecureBytes(copying: secret), claimedSenderKey: claimedSenderKey)
    }

    private static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8], receiverKey: ReceiverKey,
                             announce: Announcement, messageID: [UInt8], timestamp: Int64, associatedData extra: [UInt8],
                             ephemeral ephemeralSecret: SecureBytes, claimedSenderKey: [UInt8]? = nil) throws -> [UInt8] {
        guard recipientKey.count == 32 else { throw YaOKError(.invalidArgument, "Recipient key must be 32 bytes") }
        var (ephemeral, shared) = try Envelope.sealingAgreement(body, to: receiverKey.publicKey, messageID: messageID,
                                                                timestamp: timestamp, ephemeral: ephemeralSecret)
        defer { Sodium.wipe(&shared) }
        let senderKey = claimedSenderKey ?? sender.publicIdentity.encryptionKey
        let ad = associatedData(senderKey: senderKey, recipientKey: recipientKey, receiverKey: receiverKey.publicKey,
                                messageID: messageID, timestamp: timestamp, ephemeral: ephemeral) + extra
        let announced = announce.encoded
        let auth = try Envelope.authenticator(sender, peerKey: recipientKey, senderKey: senderKey,
                                              recipientKey: recipientKey, ad: ad + announced, body: body[...])
        var padded = try Padding.pad(body)
        defer { Sodium.wipe(&padded) }
        var inner = auth + announced + padded
        defer { Sodium.wipe(&inner) }
        var (key, nonce) = Envelope.messageKey(shared: shared, ephemeral: ephemeral,
                                               recipientKey: receiverKey.publicKey, domain: keyKey)
        defer {
            Sodium.wipe(&key)
            Sodium.wipe(&nonce)
        }
        let ciphertext = try key.withUnsafeBytes { try Sodium.aeadSeal(inner, ad: ad, nonce: nonce, key: $0) }
        return selector(receiverKey: receiverKey.publicKey, ephemeral: ephemeral) + ephemeral + ciphertext
    }

    /// Opens an envelope that `senderKey` (known from the routing tag) sent to `recipient`,
    /// trying each of `receiverKeys` (the recipient's retained keys for this sender, prekeys
    /// included) whose selector matches. `expired`: no retained key matches (its secret has
    /// been erased, or it never existed); otherwise as the packet envelope (§3.1):
    /// `malformedEnvelope`, `tampered`, `senderAuthFailed`.
    public static func open(_ sealed: [UInt8], by recipient: Identity, senderKey: [UInt8],
                            receiverKeys: [ReceiverKeyPair], messageID: [UInt8], timestamp: Int64,
                            associatedData extra: [UInt8]) throws -> Opened {
        guard senderKey.count == 32 else { throw YaOKError(.invalidArgument, "Sender key must be 32 bytes") }
        guard messageID.count == Envelope.messageIDLength else { throw YaOKError(.invalidArgument, "Message ID must be 16 bytes") }
        try Envelope.checkTimestamp(timestamp)
        guard sealed.count >= minLength else { throw YaOKError(.malformedEnvelope, "Envelope too short") }
        try Sodium.ensureInitialized()
        let wanted = Array(sealed[0..<selectorLength])
        let ephemeral = Array(sealed[selectorLength..<(selectorLength + Envelope.ephemeralLength)])
        let candidates = receiverKeys.filter {
            Sodium.constantTimeEqual(selector(receiverKey: $0.key.publicKey, ephemeral: ephemeral), wanted)
        }
        guard !candidates.isEmpty else {
            throw YaOKError(.expired, "Sealed to a receiver key this node no longer holds (erased after its retention)")
        }
        var failure = YaOKError(.tampered)
        for pair in candidates {  // more than one only on a 32-bit selector collision
            do { return try open(sealed, by: recipient, senderKey: senderKey, with: pair, ephemeral: ephemeral,
                                 messageID: messageID, timestamp: timestamp, extra: extra) }
            catch let error as YaOKError { failure = error }
        }
        throw failure
    }

    private static func open(_ sealed: [UInt8], by recipient: Identity, senderKey: [UInt8], with pair: ReceiverKeyPair,
                             ephemeral: [UInt8], messageID: [UInt8], timestamp: Int64, extra: [UInt8]) throws -> Opened {
        let ad = associatedData(senderKey: senderKey, recipientKey: recipient.publicIdentity.encryptionKey,
                                receiverKey: pair.key.publicKey, messageID: messageID, timestamp: timestamp,
                                ephemeral: ephemeral) + extra
        let (body, announced) = try openInner(sealed[(selectorLength + Envelope.ephemeralLength)...], by: recipient,
                                              senderKey: senderKey, with: pair, ephemeral: ephemeral, ad: ad,
                                              domain: keyKey, maxBodyLength: Envelope.maxBodyLength, what: "Body")
        return Opened(body: body, announced: announced, openedWith: pair.key.id)
    }

    /// Opens what both forward-secret seals share (§13.2, §13.6): the AEAD under the key from
    /// X25519(receiver key, E), then auth ‖ announcement ‖ padded body, the body's bucket, and
    /// the sender's authenticator over `ad` ‖ announcement. Returns the body and the
    /// announcement; `what` names the body in the error ("Body", "Content").
    static func openInner(_ ciphertext: ArraySlice<UInt8>, by recipient: Identity, senderKey: [UInt8],
                          with pair: ReceiverKeyPair, ephemeral: [UInt8], ad: [UInt8], domain: [UInt8],
                          maxBodyLength: Int, what: String) throws -> (body: [UInt8], announced: Announcement) {
        let recipientKey = recipient.publicIdentity.encryptionKey
        var shared = try pair.secret.withUnsafeBytes { try Sodium.x25519(secret: $0, publicKey: ephemeral) }
        defer { Sodium.wipe(&shared) }
        var (key, nonce) = Envelope.messageKey(shared: shared, ephemeral: ephemeral, recipientKey: pair.key.publicKey,
                                               domain: domain)
        defer {
            Sodium.wipe(&key)
            Sodium.wipe(&nonce)
        }
        var inner = key.withUnsafeBytes { Sodium.aeadOpen(ciphertext, ad: ad, nonce: nonce, key: $0) } ?? []
        defer { Sodium.wipe(&inner) }
        guard !inner.isEmpty else { throw YaOKError(.tampered) }
        let auth = Array(inner[0..<Envelope.authLength])
        let announcedBytes = inner[Envelope.authLength..<(Envelope.authLength + Announcement.encodedLength)]
        let padded = inner[(Envelope.authLength + Announcement.encodedLength)...]
        guard let body = Padding.unpad(padded), !body.isEmpty else { throw YaOKError(.malformedEnvelope, "Bad padding") }
        guard body.count <= maxBodyLength, Padding.bucket(for: body.count) == padded.count else {
            throw YaOKError(.malformedEnvelope, "\(what) of \(body.count) bytes in a \(padded.count)-byte bucket")
        }
        let expected = try? Envelope.authenticator(recipient, peerKey: senderKey, senderKey: senderKey,
                                                   recipientKey: recipientKey, ad: ad + Array(announcedBytes), body: body)
        guard let expected, Sodium.constantTimeEqual(auth, expected) else { throw YaOKError(.senderAuthFailed) }
        return (Array(body), try Announcement(encoded: announcedBytes))
    }

    /// BLAKE2b-32 keyed "YaOK-rk-select-v1" over K || E: tells the recipient which receiver
    /// key to try without naming it (E is fresh, so it links no two messages).
    static func selector(receiverKey: [UInt8], ephemeral: [UInt8]) -> [UInt8] {
        Sodium.blake2b([receiverKey[...], ephemeral[...]], key: selectorKey, outputLength: selectorLength)
    }

    /// 0x03 || S || R || K || message ID || timestamp (u64 BE, ms) || E (153 bytes).
    static func associatedData(senderKey: [UInt8], recipientKey: [UInt8], receiverKey: [UInt8], messageID: [UInt8],
                               timestamp: Int64, ephemeral: [UInt8]) -> [UInt8] {
        var ad: [UInt8] = [version]
        ad.reserveCapacity(153)
        ad += senderKey
        ad += recipientKey
        ad += receiverKey
        ad += messageID
        ad += withUnsafeBytes(of: timestamp.bigEndian, Array.init)
        ad += ephemeral
        return ad
    }
}
