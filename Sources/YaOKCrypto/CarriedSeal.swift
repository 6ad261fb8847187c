import YaOKSupport
import YaOKWire

/// Sealing and opening carried packets (docs/PROTOCOL.md §10.4): the packet envelope of
/// §3.1 — fresh ephemeral key, static-static sender MAC, XChaCha20-Poly1305, padding to the
/// same buckets — under its own domain, with an AD that binds both keys and the packet's
/// authenticated header, and no message ID or time in the AD (they are inside):
///
///     AD     = 0x03 || S || R || E || header_ad                       (97 + 32 bytes)
///     es     = X25519(e, R)        okm = BLAKE2b-512(key = "YaOK-carried-v1"; es || E || R)
///     key    = okm[0..32]          nonce = okm[32..56]
///     auth   = BLAKE2b-128(key = BLAKE2b-256("YaOK-auth-v1"; X25519(s, R) || S || R); AD || content)
///     sealed = E || XChaCha20-Poly1305(key, nonce, AD, auth || pad(content))
public enum CarriedSeal {
    static let version: UInt8 = 3
    static let keyKey = Array("YaOK-carried-v1".utf8)
    /// 14 days: a carried packet's longest lifetime (the default too: a shutdown lasts).
    public static let defaultLifetimeMs = CarriedPacket.maxLifetimeMs

    /// Seals `content` from `route`'s own side (`sender`) to its peer as a new carried
    /// packet: expiry = created + lifetime rounded up to the hour, the pair's carried tag
    /// for the expiry's day, the claim's hash, a random first hop limit (§4.4) and the full
    /// copy budget. A fresh ephemeral key each time, so a re-seal is a new packet identity.
    public static func seal(_ content: CarriedContent, from sender: Identity, route: RoutePair,
                            lifetimeMs: Int64 = defaultLifetimeMs) throws -> CarriedPacket {
        try SecureScratch.withRandom(count: 32) { ephemeral in
            try seal(content, from: sender, route: route, lifetimeMs: lifetimeMs, hopLimit: HopLimit.initial(),
                     copyBudget: CopyBudget.maximum, ephemeral: ephemeral)
        }
    }

    /// With a given ephemeral secret, hop limit and budget: for test vectors only; and for
    /// forgery tests, `claimHash` in place of the content's (a sender who lies about it) and
    /// `claimedSenderKey` in place of the sender's own in the AD and the MAC input (someone
    /// who got hold of a pair's route posing as its sender; the MAC still made with the
    /// real sender's secret).
    static func seal(_ content: CarriedContent, from sender: Identity, route: RoutePair, lifetimeMs: Int64,
                     hopLimit: UInt8, copyBudget: UInt8, ephemeral ephemeralSecret: SecureBytes,
                     claimHash claimHashOverride: [UInt8]? = nil, claimedSenderKey: [UInt8]? = nil) throws -> CarriedPacket {
        let senderKey = claimedSenderKey ?? sender.publicIdentity.encryptionKey
        guard route.ownKey == senderKey else {
            throw YaOKError(.invalidArgument, "The route is not this sender's")
        }
        let recipientKey = route.peerKey
        let expiryHour = try CarriedPacket.expiryHour(createdMs: content.createdMs, lifetimeMs: lifetimeMs)
        let tag = route.carriedOutgoingTag(epoch: expiryHour / 24)
        let claimHash = claimHashOverride ?? PurgeClaim.hash(content.claim)
        var body = content.encode()
        defer { Sodium.wipe(&body) }
        guard let bucket = Padding.bucket(for: body.count) else { throw YaOKError(.messageTooLarge) }
        let payloadLength = PacketEnvelope.overhead + bucket
        let headerAD = try CarriedPacket.authenticatedHeader(expiryHour: expiryHour, routingTag: tag, claimHash: claimHash,
                                                             payloadLength: payloadLength)

        guard ephemeralSecret.count == 32 else { throw YaOKError(.invalidArgument, "Ephemeral secret must be 32 bytes") }
        try Sodium.ensureInitialized()
        let ephemeral = try ephemeralSecret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        guard var shared = try? ephemeralSecret.withUnsafeBytes({ try Sodium.x25519(secret: $0, publicKey: recipientKey) }) else {
            throw YaOKError(.invalidArgument, "The recipient key is of low order: nothing can be sealed to it")
        }
        defer { Sodium.wipe(&shared) }
        let ad = associatedData(senderKey: senderKey, recipientKey: recipientKey, ephemeral: ephemeral, headerAD: headerAD)
        let sealed = try PacketEnvelope.sealAgreed(body, from: sender, senderKey: senderKey, to: recipientKey,
                                                   ephemeral: ephemeral, shared: shared, domain: keyKey, ad: ad)
        return try CarriedPacket(hopLimit: hopLimit, copyBudget: copyBudget, expiryHour: expiryHour, routingTag: tag,
                                 claimHash: claimHash, payload: sealed)
    }

    /// Opens a carried packet that `senderKey` sent to `recipient` (the caller matched its
    /// tag, e.g. with a `CarriedTagTable`). `malformedEnvelope` (shorter than 128 bytes, a
    /// low-order ephemeral key, padding or content not as sealing makes them, a claim that
    /// is not the preimage of the claim hash, a creation time that does not fit the
    /// expiry), `tampered` (bad AEAD tag: another sender key, or any authenticated byte
    /// changed), `senderAuthFailed` (sealed by someone else under this sender's tag).
    public static func open(_ packet: CarriedPacket, by recipient: Identity, senderKey: [UInt8]) throws -> CarriedContent {
        guard senderKey.count == 32 else { throw YaOKError(.invalidArgument, "Sender key must be 32 bytes") }
        let sealed = packet.payload
        var body = try PacketEnvelope.openAgreed(sealed, by: recipient, senderKey: senderKey, domain: keyKey,
                                                 maxBodyLength: CarriedContent.maxLength) { ephemeral in
            associatedData(senderKey: senderKey, recipientKey: recipient.publicIdentity.encryptionKey,
                           ephemeral: ephemeral, headerAD: packet.authenticatedHeader)
        }
        defer { Sodium.wipe(&body) }
        return try checked(try CarriedContent.decode(body[...]), in: packet)
    }

    /// §10.4 steps 6 and 7, for both carried envelopes: the claim is the preimage of the
    /// claim hash outside, and the creation time fits the expiry.
    static func checked(_ content: CarriedContent, in packet: CarriedPacket) throws -> CarriedContent {
        guard Sodium.constantTimeEqual(PurgeClaim.hash(content.claim), packet.claimHash) else {
            throw YaOKError(.malformedEnvelope, "The claim inside is not the preimage of the claim hash outside")
        }
        let lived = packet.expiresAtMs - content.createdMs
        guard lived > 0, lived <= CarriedPacket.maxLifetimeMs + CarriedPacket.hourMs else {
            throw YaOKError(.malformedEnvelope, "Created \(lived) ms before its expiry: not a lifetime of 1 ms to 14 days")
        }
        return content
    }

    /// Opens a carried packet for `recipient` from one of `contacts` (their X25519 keys), the
    /// one whose carried tag for the packet's epoch it carries; `notForMe` when none (someone
    /// else's packet and a stranger's look the same). A node keeps a `CarriedTagTable`
    /// instead of computing the tags per packet.
    public static func open(_ packet: CarriedPacket, by recipient: Identity, contacts: [[UInt8]]) throws -> (senderKey: [UInt8], content: CarriedContent) {
        for key in contacts {
            guard let route = try? RoutePair(own: recipient, peerKey: key),
                  route.carriedIncomingTag(epoch: packet.epoch) == packet.routingTag else { continue }
            return (key, try open(packet, by: recipient, senderKey: key))
        }
        throw YaOKError(.notForMe)
    }

    static func associatedData(senderKey: [UInt8], recipientKey: [UInt8], ephemeral: [UInt8], headerAD: [UInt8]) -> [UInt8] {
        var ad: [UInt8] = [version]
        ad.reserveCapacity(1 + 32 + 32 + 32 + headerAD.count)
        ad += senderKey
        ad += recipientKey
        ad += ephemeral
        ad += headerAD
        return ad
    }
}
