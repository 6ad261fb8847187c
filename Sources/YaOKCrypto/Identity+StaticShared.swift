import YaOKSupport

/// The static-static secret of the packet envelopes' sender MAC (docs/PROTOCOL.md §3.1,
/// §10.4, §13.2): X25519(own secret, contact's key) is the same for every message between
/// the two, so it is made once per contact key instead of once per seal and open (one
/// X25519 of the three or four a seal costs). Kept with the identity in guarded memory (slots
/// of its SecretSlab: 4,096 keys take 33 locked pages, not 4,096), never on disk; a node
/// drops its identity when it locks, which frees (wipes) them all. The wire
/// bytes do not change: the MAC is computed from the same secret.
extension Identity {
    /// At most this many keys are kept: past it the cache starts again (a bare envelope
    /// names its sender inside the ciphertext, so anybody could make us compute secrets with
    /// new keys; a node has far fewer contacts).
    static let staticSharedCap = 4096

    /// Runs `body` with X25519(own secret, `peerKey`), made at the first use of `peerKey`.
    /// The copy `body` sees is wiped after it returns.
    func withStaticShared<R>(_ peerKey: [UInt8], _ body: ([UInt8]) throws -> R) throws -> R {
        var ss: [UInt8]
        if let kept = staticSharedCache.withLock({ $0[peerKey] }) {
            ss = kept.withUnsafeBytes { Array($0) }
        } else {
            ss = try encryptionSecret.withUnsafeBytes { try Sodium.x25519(secret: $0, publicKey: peerKey) }
            let kept = try staticSharedSlab.allocate()
            kept.withUnsafeMutableBytes { dst in ss.withUnsafeBytes { dst.copyMemory(from: $0) } }
            staticSharedCache.withLock { cache in
                if cache.count >= Self.staticSharedCap { cache.removeAll() }
                cache[peerKey] = kept
            }
        }
        defer { Sodium.wipe(&ss) }
        return try body(ss)
    }
}

extension Envelope {
    /// `authenticator(staticSecret:…)` with the static-static secret from `identity`'s cache:
    /// BLAKE2b-128 keyed with BLAKE2b-256("YaOK-auth-v1"; DH(s, R) || S || R) over AD || body.
    static func authenticator(_ identity: Identity, peerKey: [UInt8], senderKey: [UInt8], recipientKey: [UInt8],
                              ad: [UInt8], body: ArraySlice<UInt8>) throws -> [UInt8] {
        try identity.withStaticShared(peerKey) { ss in
            var authKey = Sodium.blake2b([ss[...], senderKey[...], recipientKey[...]], key: authKeyKey, outputLength: 32)
            defer { Sodium.wipe(&authKey) }
            return Sodium.blake2b([ad[...], body], key: authKey, outputLength: authLength)
        }
    }
}
