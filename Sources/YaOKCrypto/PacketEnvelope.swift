import YaOKSupport
import YaOKWire

/// The envelope a message packet carries (docs/PROTOCOL.md §3.1): the bare envelope
/// (`Envelope`) without the recipient hint and without the sender's key, 40 bytes shorter.
///
/// In a packet the routing tag, which only the two contacts can compute (§4.3), already
/// tells the recipient who sent it and that it is theirs, so the opener is given the
/// sender's key instead of reading it from the ciphertext. Everything else is the bare
/// envelope's construction under its own domain separation: a fresh ephemeral key, the
/// static-static sender MAC, the AEAD, the padding; the associated data binds both keys.
///
///     AD     = 0x02 || S || R || message ID || timestamp (u64) || E || header_ad
///     sealed = E || XChaCha20-Poly1305(key, nonce, AD, auth || padded body)
public enum PacketEnvelope {
    static let version: UInt8 = 2
    static let keyKey = Array("YaOK-envelope-v2".utf8)
    /// Bytes added to the padded body: E (32) || auth (16) || AEAD tag (16) = 64.
    public static let overhead = Envelope.ephemeralLength + Envelope.authLength + Envelope.tagLength
    /// The shortest: a body in the first padding bucket.
    public static let minLength = overhead + Padding.buckets[0]

    /// The length `seal` returns for a body of `bodyLength` bytes (known before sealing, so
    /// the header that carries it can be bound in).
    public static func sealedLength(bodyLength: Int) throws -> Int {
        try Envelope.sealedLength(bodyLength: bodyLength) - Envelope.overhead + overhead
    }

    /// Seals `body` (1 to 10 KiB) from `sender` to the holder of `recipientKey`, binding
    /// `associatedData` (the packet header's authenticated bytes). A low-order recipient
    /// key is `invalidArgument`.
    public static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8],
                            messageID: [UInt8], timestamp: Int64, associatedData: [UInt8]) throws -> [UInt8] {
        try SecureScratch.withRandom(count: 32) { ephemeral in
            try seal(body, from: sender, to: recipientKey, messageID: messageID, timestamp: timestamp,
                     associatedData: associatedData, ephemeral: ephemeral)
        }
    }

    /// Sealing with a given ephemeral secret: only for test vectors, which must be
    /// reproducible, and for forgery tests (`claimedSenderKey`: another key than the
    /// sender's own in the AD and the MAC input, the MAC still made with the sender's secret).
    static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8], messageID: [UInt8],
                     timestamp: Int64, associatedData extra: [UInt8], ephemeralSecret secret: [UInt8],
                     claimedSenderKey: [UInt8]? = nil) throws -> [UInt8] {
        try seal(body, from: sender, to: recipientKey, messageID: messageID, timestamp: timestamp,
                 associatedData: extra, ephemeral: try SecureBytes(copying: secret), claimedSenderKey: claimedSenderKey)
    }

    private static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8],
                             messageID: [UInt8], timestamp: Int64, associatedData extra: [UInt8],
                             ephemeral ephemeralSecret: SecureBytes, claimedSenderKey: [UInt8]? = nil) throws -> [UInt8] {
        var (ephemeral, shared) = try Envelope.sealingAgreement(body, to: recipientKey, messageID: messageID,
                                                                timestamp: timestamp, ephemeral: ephemeralSecret)
        defer { Sodium.wipe(&shared) }
        let senderKey = claimedSenderKey ?? sender.publicIdentity.encryptionKey
        let ad = associatedData(senderKey: senderKey, recipientKey: recipientKey, messageID: messageID,
                                timestamp: timestamp, ephemeral: ephemeral) + extra
        return try sealAgreed(body, from: sender, senderKey: senderKey, to: recipientKey, ephemeral: ephemeral,
                              shared: shared, domain: keyKey, ad: ad)
    }

    /// The part of sealing both packet envelopes share (§3.1, §10.4), once the ephemeral
    /// agreement and the AD are made: the sender MAC over AD || body, the padding, the AEAD
    /// under the domain's message key. Returns E || ciphertext.
    static func sealAgreed(_ body: [UInt8], from sender: Identity, senderKey: [UInt8], to recipientKey: [UInt8],
                           ephemeral: [UInt8], shared: [UInt8], domain: [UInt8], ad: [UInt8]) throws -> [UInt8] {
        let auth = try Envelope.authenticator(sender, peerKey: recipientKey, senderKey: senderKey,
                                              recipientKey: recipientKey, ad: ad, body: body[...])
        var padded = try Padding.pad(body)
        defer { Sodium.wipe(&padded) }
        var inner: [UInt8] = []
        inner.reserveCapacity(Envelope.authLength + padded.count)
        inner += auth
        inner += padded
        defer { Sodium.wipe(&inner) }

        var (key, nonce) = Envelope.messageKey(shared: shared, ephemeral: ephemeral, recipientKey: recipientKey,
                                               domain: domain)
        defer {
            Sodium.wipe(&key)
            Sodium.wipe(&nonce)
        }
        let ciphertext = try key.withUnsafeBytes { try Sodium.aeadSeal(inner, ad: ad, nonce: nonce, key: $0) }
        return ephemeral + ciphertext
    }

    /// Opens a packet envelope that `senderKey` sent to `recipient` (the sender is known
    /// from the routing tag). `malformedEnvelope` (shorter than 128 bytes, a low-order
    /// ephemeral key, padding that is not exactly what sealing makes), `tampered` (bad AEAD
    /// tag: also what another sender key or other associated data gives), `senderAuthFailed`
    /// (the sender MAC does not verify: someone else sealed it under this sender's tag).
    public static func open(_ sealed: [UInt8], by recipient: Identity, senderKey: [UInt8], messageID: [UInt8],
                            timestamp: Int64, associatedData extra: [UInt8]) throws -> Envelope.Opened {
        guard senderKey.count == 32 else { throw YaOKError(.invalidArgument, "Sender key must be 32 bytes") }
        guard messageID.count == Envelope.messageIDLength else { throw YaOKError(.invalidArgument, "Message ID must be 16 bytes") }
        try Envelope.checkTimestamp(timestamp)
        let body = try openAgreed(sealed, by: recipient, senderKey: senderKey, domain: keyKey,
                                  maxBodyLength: Envelope.maxBodyLength) { ephemeral in
            associatedData(senderKey: senderKey, recipientKey: recipient.publicIdentity.encryptionKey,
                           messageID: messageID, timestamp: timestamp, ephemeral: ephemeral) + extra
        }
        return Envelope.Opened(senderKey: senderKey, body: body)
    }

    /// The part of opening both packet envelopes share (§3.1, §10.4): the ephemeral
    /// agreement, the AEAD under the domain's message key with the AD `ad(E)` makes, the
    /// padding exactly as sealing makes it (1 to `maxBodyLength` bytes in its own bucket),
    /// and the sender MAC. Returns the body (the caller owns and wipes it).
    static func openAgreed(_ sealed: [UInt8], by recipient: Identity, senderKey: [UInt8], domain: [UInt8],
                           maxBodyLength: Int, ad makeAD: ([UInt8]) -> [UInt8]) throws -> [UInt8] {
        guard sealed.count >= minLength else { throw YaOKError(.malformedEnvelope, "Envelope too short") }
        try Sodium.ensureInitialized()
        let recipientKey = recipient.publicIdentity.encryptionKey
        let ephemeral = Array(sealed[0..<Envelope.ephemeralLength])
        var shared = try recipient.encryptionSecret.withUnsafeBytes { try Sodium.x25519(secret: $0, publicKey: ephemeral) }
        defer { Sodium.wipe(&shared) }
        var (key, nonce) = Envelope.messageKey(shared: shared, ephemeral: ephemeral, recipientKey: recipientKey,
                                               domain: domain)
        defer {
            Sodium.wipe(&key)
            Sodium.wipe(&nonce)
        }
        let ad = makeAD(ephemeral)
        var inner = key.withUnsafeBytes {
            Sodium.aeadOpen(sealed[Envelope.ephemeralLength...], ad: ad, nonce: nonce, key: $0)
        } ?? []
        defer { Sodium.wipe(&inner) }
        guard !inner.isEmpty else { throw YaOKError(.tampered) }

        let auth = Array(inner[0..<Envelope.authLength])
        let padded = inner[Envelope.authLength...]
        guard let body = Padding.unpad(padded), !body.isEmpty else {
            throw YaOKError(.malformedEnvelope, "Bad padding")
        }
        guard body.count <= maxBodyLength, Padding.bucket(for: body.count) == padded.count else {
            throw YaOKError(.malformedEnvelope, "Body of \(body.count) bytes in a \(padded.count)-byte bucket")
        }
        let expected = try? Envelope.authenticator(recipient, peerKey: senderKey, senderKey: senderKey,
                                                   recipientKey: recipientKey, ad: ad, body: body)
        guard let expected, Sodium.constantTimeEqual(auth, expected) else { throw YaOKError(.senderAuthFailed) }
        return Array(body)
    }

    /// 0x02 || sender key || recipient key || message ID || timestamp (u64 BE, ms) ||
    /// ephemeral key (121 bytes); the packet header's authenticated bytes follow it.
    static func associatedData(senderKey: [UInt8], recipientKey: [UInt8], messageID: [UInt8], timestamp: Int64,
                               ephemeral: [UInt8]) -> [UInt8] {
        var ad: [UInt8] = [version]
        ad.reserveCapacity(1 + 32 + 32 + 16 + 8 + 32)
        ad += senderKey
        ad += recipientKey
        ad += messageID
        ad += withUnsafeBytes(of: timestamp.bigEndian, Array.init)
        ad += ephemeral
        return ad
    }
}
