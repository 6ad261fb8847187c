import YaOKSupport
import YaOKWire

/// A carried copy in a forward-secret pair (docs/PROTOCOL.md §13.6): §10.4's carried
/// envelope sealed to one of the recipient's receiver keys `K` instead of its long-term key,
/// with §13.2's selector and announcement. A recorded carried copy then stops opening once
/// the recipient erases K, as a routed one does: a carrier is exactly the stranger who
/// records, so carried copies must not be the way around forward secrecy.
///
///     selector = BLAKE2b-32(key = "YaOK-rk-select-v1"; K || E)
///     AD       = 0x04 || S || R || K || E || header_ad                        (129 + 32 bytes)
///     es       = X25519(e, K)        okm = BLAKE2b-512(key = "YaOK-carried-v2"; es || E || K)
///     auth     = BLAKE2b-128(key = auth_key(S, R); AD || announcement || content)
///     sealed   = selector || E || XChaCha20-Poly1305(key, nonce, AD, auth || announcement || pad(content))
extension CarriedSeal {
    static let forwardSecretVersion: UInt8 = 4
    static let forwardSecretKeyKey = Array("YaOK-carried-v2".utf8)
    /// Bytes added to the padded content: 108, 44 more than §10.4's 64 (selector 4, announcement 40).
    public static let forwardSecretOverhead = ForwardSecretEnvelope.overhead

    /// What opening yields: the content, the sender's announcement, and which of the
    /// recipient's receiver keys opened it.
    public struct OpenedForwardSecret: Sendable {
        public let content: CarriedContent
        public let announced: Announcement
        public let openedWith: UInt32
    }

    /// Seals `content` from `route`'s own side to its peer under the peer's receiver key
    /// `receiverKey`, announcing `announce`; everything else (expiry, tag, claim hash, hop
    /// limit, budget) as `seal`.
    public static func sealForwardSecret(_ content: CarriedContent, from sender: Identity, route: RoutePair,
                                         receiverKey: ReceiverKey, announce: Announcement,
                                         lifetimeMs: Int64 = defaultLifetimeMs) throws -> CarriedPacket {
        try SecureScratch.withRandom(count: 32) { ephemeral in
            try sealForwardSecret(content, from: sender, route: route, receiverKey: receiverKey, announce: announce,
                                  lifetimeMs: lifetimeMs, hopLimit: HopLimit.initial(), copyBudget: CopyBudget.maximum,
                                  ephemeral: ephemeral)
        }
    }

    /// With a given ephemeral secret, hop limit and budget: for test vectors only.
    static func sealForwardSecret(_ content: CarriedContent, from sender: Identity, route: RoutePair,
                                  receiverKey: ReceiverKey, announce: Announcement, lifetimeMs: Int64,
                                  hopLimit: UInt8, copyBudget: UInt8, ephemeral ephemeralSecret: SecureBytes) throws -> CarriedPacket {
        let senderKey = sender.publicIdentity.encryptionKey
        guard route.ownKey == senderKey else { throw YaOKError(.invalidArgument, "The route is not this sender's") }
        guard ephemeralSecret.count == 32 else { throw YaOKError(.invalidArgument, "Ephemeral secret must be 32 bytes") }
        let recipientKey = route.peerKey
        let expiryHour = try CarriedPacket.expiryHour(createdMs: content.createdMs, lifetimeMs: lifetimeMs)
        let tag = route.carriedOutgoingTag(epoch: expiryHour / 24)
        let claimHash = PurgeClaim.hash(content.claim)
        var body = content.encode()
        defer { Sodium.wipe(&body) }
        guard let bucket = Padding.bucket(for: body.count) else { throw YaOKError(.messageTooLarge) }
        let headerAD = try CarriedPacket.authenticatedHeader(expiryHour: expiryHour, routingTag: tag, claimHash: claimHash,
                                                             payloadLength: forwardSecretOverhead + bucket)

        try Sodium.ensureInitialized()
        let ephemeral = try ephemeralSecret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        guard var shared = try? ephemeralSecret.withUnsafeBytes({ try Sodium.x25519(secret: $0, publicKey: receiverKey.publicKey) }) else {
            throw YaOKError(.invalidArgument, "The receiver key is of low order: nothing can be sealed to it")
        }
        defer { Sodium.wipe(&shared) }
        let ad = forwardSecretAD(senderKey: senderKey, recipientKey: recipientKey, receiverKey: receiverKey.publicKey,
                                 ephemeral: ephemeral, headerAD: headerAD)
        let announced = announce.encoded
        let auth = try Envelope.authenticator(sender, peerKey: recipientKey, senderKey: senderKey,
                                              recipientKey: recipientKey, ad: ad + announced, body: body[...])
        var padded = try Padding.pad(body)
        defer { Sodium.wipe(&padded) }
        var inner = auth + announced + padded
        defer { Sodium.wipe(&inner) }
        var (key, nonce) = Envelope.messageKey(shared: shared, ephemeral: ephemeral, recipientKey: receiverKey.publicKey,
                                               domain: forwardSecretKeyKey)
        defer {
            Sodium.wipe(&key)
            Sodium.wipe(&nonce)
        }
        let ciphertext = try key.withUnsafeBytes { try Sodium.aeadSeal(inner, ad: ad, nonce: nonce, key: $0) }
        let sealed = ForwardSecretEnvelope.selector(receiverKey: receiverKey.publicKey, ephemeral: ephemeral) + ephemeral + ciphertext
        return try CarriedPacket(hopLimit: hopLimit, copyBudget: copyBudget, expiryHour: expiryHour, routingTag: tag,
                                 claimHash: claimHash, payload: sealed)
    }

    /// Whether the packet's payload names one of `receiverKeys` by its selector (§13.6):
    /// then it is opened with `openForwardSecret`, else as §10.4.
    public static func isForwardSecret(_ packet: CarriedPacket, receiverKeys: [ReceiverKeyPair]) -> Bool {
        SealedMessage.isForwardSecret(packet.payload, receiverKeys: receiverKeys)
    }

    /// Opens a forward-secret carried packet that `senderKey` sent to `recipient` (the tag
    /// named the sender), trying each of `receiverKeys` whose selector matches. `expired`:
    /// none matches (erased, or never held); `malformedEnvelope`, `tampered`,
    /// `senderAuthFailed` and the content checks as `open` (§10.4 steps 1 to 7).
    public static func openForwardSecret(_ packet: CarriedPacket, by recipient: Identity, senderKey: [UInt8],
                                         receiverKeys: [ReceiverKeyPair]) throws -> OpenedForwardSecret {
        guard senderKey.count == 32 else { throw YaOKError(.invalidArgument, "Sender key must be 32 bytes") }
        let sealed = packet.payload
        guard sealed.count >= ForwardSecretEnvelope.minLength else { throw YaOKError(.malformedEnvelope, "Envelope too short") }
        try Sodium.ensureInitialized()
        let selectorLength = ForwardSecretEnvelope.selectorLength
        let wanted = Array(sealed[0..<selectorLength])
        let ephemeral = Array(sealed[selectorLength..<(selectorLength + Envelope.ephemeralLength)])
        let candidates = receiverKeys.filter {
            Sodium.constantTimeEqual(ForwardSecretEnvelope.selector(receiverKey: $0.key.publicKey, ephemeral: ephemeral), wanted)
        }
        guard !candidates.isEmpty else {
            throw YaOKError(.expired, "Sealed to a receiver key this node no longer holds (erased after its retention)")
        }
        var failure = YaOKError(.tampered)
        for pair in candidates {  // more than one only on a 32-bit selector collision
            do {
                return try openForwardSecret(packet, by: recipient, senderKey: senderKey, with: pair, ephemeral: ephemeral)
            } catch let error as YaOKError { failure = error }
        }
        throw failure
    }

    private static func openForwardSecret(_ packet: CarriedPacket, by recipient: Identity, senderKey: [UInt8],
                                          with pair: ReceiverKeyPair, ephemeral: [UInt8]) throws -> OpenedForwardSecret {
        let ad = forwardSecretAD(senderKey: senderKey, recipientKey: recipient.publicIdentity.encryptionKey,
                                 receiverKey: pair.key.publicKey, ephemeral: ephemeral,
                                 headerAD: packet.authenticatedHeader)
        let start = ForwardSecretEnvelope.selectorLength + Envelope.ephemeralLength
        var (body, announced) = try ForwardSecretEnvelope.openInner(
            packet.payload[start...], by: recipient, senderKey: senderKey, with: pair, ephemeral: ephemeral, ad: ad,
            domain: forwardSecretKeyKey, maxBodyLength: CarriedContent.maxLength, what: "Content")
        defer { Sodium.wipe(&body) }
        let content = try checked(try CarriedContent.decode(body[...]), in: packet)
        return OpenedForwardSecret(content: content, announced: announced, openedWith: pair.key.id)
    }

    /// 0x04 || S || R || K || E || header_ad (129 + 32 bytes).
    static func forwardSecretAD(senderKey: [UInt8], recipientKey: [UInt8], receiverKey: [UInt8], ephemeral: [UInt8],
                                headerAD: [UInt8]) -> [UInt8] {
        var ad: [UInt8] = [forwardSecretVersion]
        ad.reserveCapacity(1 + 32 * 4 + headerAD.count)
        ad += senderKey
        ad += recipientKey
        ad += receiverKey
        ad += ephemeral
        ad += headerAD
        return ad
    }
}
