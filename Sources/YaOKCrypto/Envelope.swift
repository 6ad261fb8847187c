import YaOKSupport
import YaOKWire

/// The end-to-end message envelope (docs/PROTOCOL.md, "Message envelope").
///
/// Only the recipient can read it (XChaCha20-Poly1305 under a key from a fresh ephemeral
/// X25519 key and the recipient's key); the recipient knows who sent it (a MAC under the
/// static-static X25519 secret, which — unlike a signature — the recipient could also have
/// made, so it convinces the recipient and no third party); the sender's key travels only
/// inside the ciphertext; and the associated data binds recipient, message ID and time.
///
/// This is the bare envelope: what the C ABI's `yaok_envelope_seal/open` make and open, for
/// vectors and for interoperating with someone who is not a contact. Message packets carry
/// `PacketEnvelope`, the same construction without the hint and the sender key (the
/// routing tag names the sender there), 40 bytes shorter.
public enum Envelope {
    static let version: UInt8 = 1
    public static let messageIDLength = 16
    /// US-020 AC-020-04: "Message too large (max 10KB)".
    public static let maxBodyLength = 10 * 1024
    /// The longest text a received body can become: a body that is not UTF-8 is stored with
    /// each ill-formed sequence replaced by U+FFFD (3 bytes), so one invalid byte becomes
    /// three (docs/PROTOCOL.md §3.2). YAOK_MAX_RECEIVED_TEXT_BYTES.
    public static let maxReceivedTextLength = 3 * maxBodyLength

    static let ephemeralLength = 32
    static let hintLength = 8
    static let senderKeyLength = 32
    static let authLength = 16
    static let tagLength = Sodium.aeadTagLength
    /// Bytes added to the padded body: E || hint || sender key || auth || AEAD tag.
    public static let overhead = ephemeralLength + hintLength + senderKeyLength + authLength + tagLength

    static let hintKey = Array("YaOK-hint-v1".utf8)
    static let keyKey = Array("YaOK-envelope-v1".utf8)
    static let authKeyKey = Array("YaOK-auth-v1".utf8)

    /// What a successful open yields.
    public struct Opened: Sendable, Equatable {
        /// The sender's X25519 key, authenticated by the static-static MAC.
        public let senderKey: [UInt8]
        public let body: [UInt8]
    }

    /// Seals `body` (1 to 10 KiB) from `sender` to the holder of `recipientKey` (X25519).
    /// `associatedData` is bound in too: the packet header's authenticated bytes
    /// (`RoutedHeader.authenticatedBytes`), or nothing for a bare envelope. A low-order
    /// recipient key (every X25519 output all zero) is `invalidArgument`.
    public static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8],
                            messageID: [UInt8], timestamp: Int64, associatedData: [UInt8] = []) throws -> [UInt8] {
        try SecureScratch.withRandom(count: 32) { ephemeral in
            try seal(body, from: sender, to: recipientKey, messageID: messageID, timestamp: timestamp,
                     associatedData: associatedData, ephemeral: ephemeral)
        }
    }

    /// The length `seal` returns for a body of `bodyLength` bytes: known before sealing, so
    /// the packet header that carries it can be authenticated by the envelope itself.
    public static func sealedLength(bodyLength: Int) throws -> Int {
        guard bodyLength >= 1 else { throw YaOKError(.emptyMessage) }
        guard bodyLength <= maxBodyLength, let bucket = Padding.bucket(for: bodyLength) else {
            throw YaOKError(.messageTooLarge)
        }
        return overhead + bucket
    }

    /// Sealing with a given ephemeral secret: only for test vectors, which must be reproducible.
    static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8],
                     messageID: [UInt8], timestamp: Int64, associatedData extra: [UInt8] = [],
                     ephemeralSecret secret: [UInt8]) throws -> [UInt8] {
        try seal(body, from: sender, to: recipientKey, messageID: messageID, timestamp: timestamp,
                 associatedData: extra, ephemeral: try SecureBytes(copying: secret))
    }

    /// Every secret temporary is wiped before this returns: the ephemeral secret stays in
    /// guarded memory, the DH output, message key and nonce are wiped, the padded body and
    /// the inner plaintext are wiped, and nothing secret is concatenated into a buffer that
    /// is not (the key derivation and the authenticator hash their inputs in place).
    private static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8],
                             messageID: [UInt8], timestamp: Int64, associatedData extra: [UInt8],
                             ephemeral ephemeralSecret: SecureBytes) throws -> [UInt8] {
        var (ephemeral, shared) = try sealingAgreement(body, to: recipientKey, messageID: messageID, timestamp: timestamp,
                                                       ephemeral: ephemeralSecret)
        defer { Sodium.wipe(&shared) }
        let ad = associatedData(recipientKey: recipientKey, messageID: messageID, timestamp: timestamp,
                                ephemeral: ephemeral) + extra
        let senderKey = sender.publicIdentity.encryptionKey
        let auth = try sender.encryptionSecret.withUnsafeBytes {
            try authenticator(staticSecret: $0, peerKey: recipientKey, senderKey: senderKey,
                              recipientKey: recipientKey, ad: ad, body: body[...])
        }
        var padded = try Padding.pad(body)
        defer { Sodium.wipe(&padded) }
        // Built in place at its final size: appending never reallocates, so no unwiped
        // copy of the plaintext is left behind in a buffer that was outgrown.
        var inner: [UInt8] = []
        inner.reserveCapacity(senderKeyLength + authLength + padded.count)
        inner += senderKey
        inner += auth
        inner += padded
        defer { Sodium.wipe(&inner) }

        var (key, nonce) = messageKey(shared: shared, ephemeral: ephemeral, recipientKey: recipientKey)
        defer {
            Sodium.wipe(&key)
            Sodium.wipe(&nonce)
        }
        let ciphertext = try key.withUnsafeBytes { try Sodium.aeadSeal(inner, ad: ad, nonce: nonce, key: $0) }
        return ephemeral + hint(ephemeral: ephemeral, recipientKey: recipientKey) + ciphertext
    }

    /// Opens a sealed envelope with `recipient`'s keys. Each failure has its own code:
    /// `notForMe` (the recipient hint does not match), `tampered` (bad AEAD tag),
    /// `senderAuthFailed` (the sender MAC does not verify), `unknownSender`
    /// (`isKnownSender` refused the authenticated sender key), `malformedEnvelope` (too
    /// short, a low-order ephemeral key, padding that is not ISO/IEC 7816-4 in the smallest
    /// bucket for the body, an empty body or one over 10 KiB).
    /// `associatedData` must be what the sender bound in (else `tampered`).
    public static func open(_ sealed: [UInt8], by recipient: Identity, messageID: [UInt8], timestamp: Int64,
                            associatedData extra: [UInt8] = [],
                            isKnownSender: ([UInt8]) -> Bool = { _ in true }) throws -> Opened {
        guard messageID.count == messageIDLength else { throw YaOKError(.invalidArgument, "Message ID must be 16 bytes") }
        try checkTimestamp(timestamp)
        let minInner = senderKeyLength + authLength + Padding.buckets[0]
        guard sealed.count >= ephemeralLength + hintLength + minInner + tagLength else {
            throw YaOKError(.malformedEnvelope, "Envelope too short")
        }
        try Sodium.ensureInitialized()
        let recipientKey = recipient.publicIdentity.encryptionKey
        let ephemeral = Array(sealed[0..<ephemeralLength])
        let hintBytes = Array(sealed[ephemeralLength..<ephemeralLength + hintLength])
        guard Sodium.constantTimeEqual(hintBytes, hint(ephemeral: ephemeral, recipientKey: recipientKey)) else {
            throw YaOKError(.notForMe)
        }
        var shared = try recipient.encryptionSecret.withUnsafeBytes { try Sodium.x25519(secret: $0, publicKey: ephemeral) }
        defer { Sodium.wipe(&shared) }
        var (key, nonce) = messageKey(shared: shared, ephemeral: ephemeral, recipientKey: recipientKey)
        defer {
            Sodium.wipe(&key)
            Sodium.wipe(&nonce)
        }
        let ad = associatedData(recipientKey: recipientKey, messageID: messageID, timestamp: timestamp,
                                ephemeral: ephemeral) + extra

        // Held in one variable from the start, so that the wipe reaches the only copy (a
        // second reference would make `wipe` copy the buffer and clear the copy).
        var inner = key.withUnsafeBytes {
            Sodium.aeadOpen(sealed[(ephemeralLength + hintLength)...], ad: ad, nonce: nonce, key: $0)
        } ?? []
        defer { Sodium.wipe(&inner) }
        guard !inner.isEmpty else { throw YaOKError(.tampered) }

        let senderKey = Array(inner[0..<senderKeyLength])
        let auth = Array(inner[senderKeyLength..<senderKeyLength + authLength])
        let padded = inner[(senderKeyLength + authLength)...]
        guard let body = Padding.unpad(padded), !body.isEmpty else {
            throw YaOKError(.malformedEnvelope, "Bad padding")
        }
        // Exactly what a sealer makes: at most 10 KiB, in the smallest bucket that holds it,
        // so that lengths say no more than they must and every implementation agrees.
        guard body.count <= maxBodyLength, Padding.bucket(for: body.count) == padded.count else {
            throw YaOKError(.malformedEnvelope, "Body of \(body.count) bytes in a \(padded.count)-byte bucket")
        }
        let expected = try? recipient.encryptionSecret.withUnsafeBytes {
            try authenticator(staticSecret: $0, peerKey: senderKey, senderKey: senderKey,
                              recipientKey: recipientKey, ad: ad, body: body)
        }
        guard let expected, Sodium.constantTimeEqual(auth, expected) else { throw YaOKError(.senderAuthFailed) }
        guard isKnownSender(senderKey) else { throw YaOKError(.unknownSender) }
        return Opened(senderKey: senderKey, body: Array(body))
    }

    /// The checks every seal makes (the bare envelope and the packet envelope), then the
    /// ephemeral public key and the ephemeral–recipient X25519 output (wipe it).
    static func sealingAgreement(_ body: [UInt8], to recipientKey: [UInt8], messageID: [UInt8], timestamp: Int64,
                                 ephemeral ephemeralSecret: SecureBytes) throws -> (ephemeral: [UInt8], shared: [UInt8]) {
        guard !body.isEmpty else { throw YaOKError(.emptyMessage) }
        guard body.count <= maxBodyLength else { throw YaOKError(.messageTooLarge) }
        guard recipientKey.count == 32 else { throw YaOKError(.invalidArgument, "Recipient key must be 32 bytes") }
        guard messageID.count == messageIDLength else { throw YaOKError(.invalidArgument, "Message ID must be 16 bytes") }
        try checkTimestamp(timestamp)
        guard ephemeralSecret.count == 32 else { throw YaOKError(.invalidArgument, "Ephemeral secret must be 32 bytes") }
        try Sodium.ensureInitialized()
        let ephemeral = try ephemeralSecret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        // An all-zero X25519 output means a low-order recipient key (cards refuse those).
        guard let shared = try? ephemeralSecret.withUnsafeBytes({ try Sodium.x25519(secret: $0, publicKey: recipientKey) }) else {
            throw YaOKError(.invalidArgument, "The recipient key is of low order: nothing can be sealed to it")
        }
        return (ephemeral, shared)
    }

    /// A message's time is a packet's `created` (docs/PROTOCOL.md §4.2): 0 to 2^48 − 1 ms, the
    /// range of the routed header's u48 field, though the AD carries it in 8 bytes. Outside
    /// it (a negative time included) is `invalidArgument`: no packet could carry the envelope,
    /// and an implementation that keeps times in 48 bits would not agree on it.
    static func checkTimestamp(_ timestamp: Int64) throws {
        guard (0...RoutedHeader.maxCreatedMs).contains(timestamp) else {
            throw YaOKError(.invalidArgument, "A time is milliseconds since 1970, 0 to 2^48-1")
        }
    }

    /// version || recipient key || message ID || timestamp (u64 BE, ms) || ephemeral key;
    /// the caller's extra associated data follows it.
    static func associatedData(recipientKey: [UInt8], messageID: [UInt8], timestamp: Int64, ephemeral: [UInt8]) -> [UInt8] {
        var ad: [UInt8] = [version]
        ad.reserveCapacity(1 + 32 + 16 + 8 + 32)
        ad += recipientKey
        ad += messageID
        ad += withUnsafeBytes(of: timestamp.bigEndian, Array.init)
        ad += ephemeral
        return ad
    }

    /// BLAKE2b-64 keyed "YaOK-hint-v1" over E || recipient key: unlinkable across messages
    /// (E is fresh), checkable only by whoever knows the recipient's public key.
    static func hint(ephemeral: [UInt8], recipientKey: [UInt8]) -> [UInt8] {
        Sodium.blake2b(ephemeral + recipientKey, key: hintKey, outputLength: hintLength)
    }

    /// BLAKE2b-512 keyed "YaOK-envelope-v1" over DH(e, R) || E || R: key (32) || nonce (24).
    /// Both are secret (the nonce comes from the same output): the caller wipes them.
    /// `domain` is the BLAKE2b key: "YaOK-envelope-v1" here, "YaOK-envelope-v2" for the
    /// packet envelope (PacketEnvelope).
    static func messageKey(shared: [UInt8], ephemeral: [UInt8], recipientKey: [UInt8],
                           domain: [UInt8] = keyKey) -> (key: [UInt8], nonce: [UInt8]) {
        var okm = Sodium.blake2b([shared[...], ephemeral[...], recipientKey[...]], key: domain, outputLength: 64)
        defer { Sodium.wipe(&okm) }
        return (Array(okm[0..<32]), Array(okm[32..<56]))
    }

    /// BLAKE2b-128 keyed with BLAKE2b-256("YaOK-auth-v1"; DH(s, R) || S || R) over AD || body.
    /// The static-static secret (the long-term pairwise secret), the key made from it and
    /// the body are hashed in place, never joined into a temporary buffer.
    static func authenticator(staticSecret: UnsafeRawBufferPointer, peerKey: [UInt8], senderKey: [UInt8],
                              recipientKey: [UInt8], ad: [UInt8], body: ArraySlice<UInt8>) throws -> [UInt8] {
        var ss = try Sodium.x25519(secret: staticSecret, publicKey: peerKey)
        defer { Sodium.wipe(&ss) }
        var authKey = Sodium.blake2b([ss[...], senderKey[...], recipientKey[...]], key: authKeyKey, outputLength: 32)
        defer { Sodium.wipe(&authKey) }
        return Sodium.blake2b([ad[...], body], key: authKey, outputLength: authLength)
    }
}
