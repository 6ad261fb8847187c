import CSodium
import YaOK

/// Identity and message-crypto figures (issue 2, "Benchmark"):
///  - identity key generation time (target < 1 ms; the seed asks < 500 ms);
///  - envelope seal+open per second for 1 KB and 10 KB bodies;
///  - the same sequence of raw libsodium calls the envelope makes (RawEnvelope below), per
///    second, and the ratio envelope / raw (target ≤ 1.5×);
///  - an X25519 public key (each envelope's ephemeral key): libsodium's crypto_scalarmult_base
///    against Sodium.x25519PublicKey (Ed25519 fixed base and the Swift map, the same bytes).
/// Each figure is the best of several rounds (the least disturbed by other work on the machine).
enum CryptoBench {
    static let rounds = 5

    static func run() throws {
        try keyGeneration()
        try fixedBaseKey()
        for size in [1024, 10 * 1024] { try sealOpen(bodySize: size) }
    }

    // MARK: - key generation

    static func keyGeneration() throws {
        let iterations = 500
        var best = Double.infinity
        for _ in 0..<rounds {
            best = min(best, try Measure.perIteration(iterations) { _ = try Identity(name: "Alice") })
        }
        var raw = Double.infinity
        var xPub = [UInt8](repeating: 0, count: 32), xSec = [UInt8](repeating: 0, count: 32)
        var edPub = [UInt8](repeating: 0, count: 32), edSec = [UInt8](repeating: 0, count: 64)
        for _ in 0..<rounds {
            raw = min(raw, Measure.perIteration(iterations) {
                _ = crypto_box_keypair(&xPub, &xSec)
                _ = crypto_sign_keypair(&edPub, &edSec)
            })
        }
        // Identity keeps its secrets in three SecureBytes (sodium_malloc: guard pages + mlock).
        var guarded = Double.infinity
        for _ in 0..<rounds {
            guarded = min(guarded, try Measure.perIteration(iterations) {
                _ = try SecureBytes(count: 64); _ = try SecureBytes(count: 32); _ = try SecureBytes(count: 64)
            })
        }
        Measure.report("identity key generation", "\(Measure.format(best * 1e3, decimals: 3)) ms",
                       target: "< 1 ms; seed < 500 ms")
        Measure.report("  raw X25519 + Ed25519 key pairs", "\(Measure.format(raw * 1e3, decimals: 3)) ms")
        Measure.report("  3 guarded allocations (sodium_malloc)", "\(Measure.format(guarded * 1e3, decimals: 3)) ms")
        Measure.report("  card (sign) + decode (verify)", "\(Measure.format(try cardTime() * 1e3, decimals: 3)) ms")
        // Card version 2 adds a 36-byte prekey (docs/PROTOCOL.md §2, §13.4).
        let alice = try Identity(name: "Alice")
        let v1 = alice.card, v2 = alice.card(prekey: try ReceiverKeyPair.generate(id: ReceiverKey.prekeyID(day: 20_000)).key)
        Measure.report("  card size v1 / v2 (\"Alice\")",
                       "\(v1.payload.count) / \(v2.payload.count) bytes, \(v1.text.count) / \(v2.text.count) characters")
    }

    static func fixedBaseKey() throws {
        let iterations = 2000
        let secret = randomBytes(32)
        var out = [UInt8](repeating: 0, count: 32)
        var libsodium = Double.infinity, ours = Double.infinity, edwards = Double.infinity
        for _ in 0..<rounds {
            edwards = min(edwards, Measure.perIteration(iterations) { _ = crypto_scalarmult_ed25519_base_noclamp(&out, secret) })
            libsodium = min(libsodium, Measure.perIteration(iterations) { _ = crypto_scalarmult_base(&out, secret) })
            ours = min(ours, try Measure.perIteration(iterations) {
                out = try secret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
            })
        }
        Measure.report("X25519 public key, crypto_scalarmult_base", "\(Measure.format(libsodium * 1e6, decimals: 1)) µs")
        Measure.report("X25519 public key, Sodium.x25519PublicKey", "\(Measure.format(ours * 1e6, decimals: 1)) µs")
        Measure.report("  of which Ed25519 fixed base", "\(Measure.format(edwards * 1e6, decimals: 1)) µs")
    }

    static func cardTime() throws -> Double {
        let alice = try Identity(name: "Alice")
        var best = Double.infinity
        for _ in 0..<rounds {
            best = min(best, try Measure.perIteration(300) { _ = try ContactCard(text: alice.card.text) })
        }
        return best
    }

    // MARK: - envelope vs raw primitives

    static func sealOpen(bodySize: Int) throws {
        let aliceSecrets = randomBytes(64), bobSecrets = randomBytes(64)
        let alice = try Identity(name: "Alice", secrets: SecureBytes(copying: aliceSecrets))
        let bob = try Identity(name: "Bob", secrets: SecureBytes(copying: bobSecrets))
        let bobKey = bob.publicIdentity.encryptionKey
        let aliceKey = alice.publicIdentity.encryptionKey
        let body = randomBytes(bodySize)
        let messageID = randomBytes(16)
        let timestamp: Int64 = 1_700_000_000_000

        let raw = RawEnvelope(senderSecret: Array(aliceSecrets[0..<32]), senderKey: aliceKey,
                              recipientSecret: Array(bobSecrets[0..<32]), recipientKey: bobKey)
        defer { raw.deallocate() }

        // The baseline must be the same construction: each side opens the other's envelopes.
        let fromRaw = raw.seal(body, messageID: messageID, timestamp: timestamp)
        guard try Envelope.open(fromRaw, by: bob, messageID: messageID, timestamp: timestamp).body == body,
              raw.open(try Envelope.seal(body, from: alice, to: bobKey, messageID: messageID, timestamp: timestamp),
                       messageID: messageID, timestamp: timestamp) == body else {
            throw BenchError("the raw baseline does not match Envelope")
        }

        let iterations = bodySize > 4096 ? 1000 : 1500
        var envelope = Double.infinity, primitives = Double.infinity
        for _ in 0..<rounds {
            envelope = min(envelope, try Measure.perIteration(iterations) {
                let sealed = try Envelope.seal(body, from: alice, to: bobKey, messageID: messageID, timestamp: timestamp)
                _ = try Envelope.open(sealed, by: bob, messageID: messageID, timestamp: timestamp)
            })
            primitives = min(primitives, Measure.perIteration(iterations) {
                let sealed = raw.seal(body, messageID: messageID, timestamp: timestamp)
                _ = raw.open(sealed, messageID: messageID, timestamp: timestamp)
            })
        }
        let label = "\(bodySize / 1024) KB"
        Measure.report("envelope seal+open, \(label)", "\(Int(1 / envelope))/s (\(Measure.format(envelope * 1e6, decimals: 1)) µs)")
        Measure.report("raw libsodium seal+open, \(label)", "\(Int(1 / primitives))/s (\(Measure.format(primitives * 1e6, decimals: 1)) µs)")
        Measure.report("ratio envelope / raw, \(label)", "\(Measure.format(envelope / primitives))x", target: "<= 1.5x")
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        randombytes_buf(&out, count)
        return out
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The libsodium calls Envelope.seal/open make, in the same order, on preallocated buffers
/// and with nothing else: the floor the envelope is compared with. Same construction as
/// Sources/YaOKCrypto/Envelope.swift (checked against it before timing):
///   seal: e = random; E = X25519(e, base); shared = X25519(e, R);
///         AD = 1 || R || id || ts || E; ss = X25519(s, R);
///         authKey = BLAKE2b-256[YaOK-auth-v1](ss || S || R); auth = BLAKE2b-128[authKey](AD || body);
///         inner = S || auth || sodium_pad(body); okm = BLAKE2b-512[YaOK-envelope-v1](shared || E || R);
///         hint = BLAKE2b-64[YaOK-hint-v1](E || R); out = E || hint || XChaCha20-Poly1305(inner, AD)
///   open: the reverse, with sodium_unpad and sodium_memcmp, wiping the same intermediates.
final class RawEnvelope {
    let senderSecret: [UInt8], senderKey: [UInt8], recipientSecret: [UInt8], recipientKey: [UInt8]
    let hintKey = Array("YaOK-hint-v1".utf8), keyKey = Array("YaOK-envelope-v1".utf8), authKeyKey = Array("YaOK-auth-v1".utf8)
    static let capacity = 32 + 8 + 32 + 16 + 16384 + 16 + 128
    let e = UnsafeMutablePointer<UInt8>.allocate(capacity: 32)
    let shared = UnsafeMutablePointer<UInt8>.allocate(capacity: 32)
    let ss = UnsafeMutablePointer<UInt8>.allocate(capacity: 32)
    let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)  // hash inputs
    let ad = UnsafeMutablePointer<UInt8>.allocate(capacity: 89)
    let authKey = UnsafeMutablePointer<UInt8>.allocate(capacity: 32)
    let auth = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)
    let hint = UnsafeMutablePointer<UInt8>.allocate(capacity: 8)
    let okm = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
    let inner = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
    let out = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)

    init(senderSecret: [UInt8], senderKey: [UInt8], recipientSecret: [UInt8], recipientKey: [UInt8]) {
        self.senderSecret = senderSecret
        self.senderKey = senderKey
        self.recipientSecret = recipientSecret
        self.recipientKey = recipientKey
    }

    func deallocate() {
        for p in [e, shared, ss, scratch, ad, authKey, auth, hint, okm, inner, out] { p.deallocate() }
    }

    private func fillAD(messageID: [UInt8], timestamp: Int64, ephemeral: UnsafePointer<UInt8>) {
        ad[0] = 1
        (ad + 1).update(from: recipientKey, count: 32)
        (ad + 33).update(from: messageID, count: 16)
        var be = timestamp.bigEndian
        withUnsafeBytes(of: &be) { (ad + 49).update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: 8) }
        (ad + 57).update(from: ephemeral, count: 32)
    }

    private func hash(_ output: UnsafeMutablePointer<UInt8>, _ outputLength: Int, _ parts: [(UnsafePointer<UInt8>, Int)],
                      key: UnsafePointer<UInt8>, _ keyLength: Int) {
        var n = 0
        for (p, c) in parts { (scratch + n).update(from: p, count: c); n += c }
        _ = crypto_generichash(output, outputLength, scratch, UInt64(n), key, keyLength)
    }

    private func authenticator(peer: UnsafePointer<UInt8>, secret: UnsafePointer<UInt8>, sender: UnsafePointer<UInt8>,
                               recipient: UnsafePointer<UInt8>, body: UnsafePointer<UInt8>, bodyLength: Int) {
        _ = crypto_scalarmult(ss, secret, peer)
        authKeyKey.withUnsafeBufferPointer { hash(authKey, 32, [(UnsafePointer(ss), 32), (sender, 32), (recipient, 32)], key: $0.baseAddress!, $0.count) }
        hash(auth, 16, [(UnsafePointer(ad), 89), (body, bodyLength)], key: authKey, 32)
        sodium_memzero(ss, 32)
        sodium_memzero(authKey, 32)
    }

    func seal(_ body: [UInt8], messageID: [UInt8], timestamp: Int64) -> [UInt8] {
        randombytes_buf(e, 32)
        _ = crypto_scalarmult_base(out, e)  // E, at the start of the output
        let E = UnsafePointer(out)
        recipientKey.withUnsafeBufferPointer { r in
            senderKey.withUnsafeBufferPointer { s in
                senderSecret.withUnsafeBufferPointer { sSecret in
                    body.withUnsafeBufferPointer { b in
                        let R = r.baseAddress!
                        _ = crypto_scalarmult(shared, e, R)
                        fillAD(messageID: messageID, timestamp: timestamp, ephemeral: E)
                        authenticator(peer: R, secret: sSecret.baseAddress!, sender: s.baseAddress!, recipient: R,
                                      body: b.baseAddress!, bodyLength: b.count)
                        inner.update(from: s.baseAddress!, count: 32)
                        (inner + 32).update(from: auth, count: 16)
                        let bucket = 64 << (0...8).first { 64 << $0 >= b.count + 1 }!
                        (inner + 48).update(from: b.baseAddress!, count: b.count)
                        var padded = 0
                        _ = sodium_pad(&padded, inner + 48, b.count, bucket, bucket)
                        keyKey.withUnsafeBufferPointer { hash(okm, 64, [(UnsafePointer(shared), 32), (E, 32), (R, 32)], key: $0.baseAddress!, $0.count) }
                        hintKey.withUnsafeBufferPointer { hash(out + 32, 8, [(E, 32), (R, 32)], key: $0.baseAddress!, $0.count) }
                        var written: UInt64 = 0
                        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(out + 40, &written, inner, UInt64(48 + padded),
                                                                       ad, 89, nil, okm + 32, okm)
                        sodium_memzero(e, 32)
                        sodium_memzero(shared, 32)
                        sodium_memzero(inner, 48 + padded)
                        sodium_memzero(okm, 64)
                    }
                }
            }
        }
        let total = 40 + 48 + (64 << (0...8).first { 64 << $0 >= body.count + 1 }!) + 16
        return Array(UnsafeBufferPointer(start: out, count: total))
    }

    /// The body, or nil when any check fails.
    func open(_ sealed: [UInt8], messageID: [UInt8], timestamp: Int64) -> [UInt8]? {
        sealed.withUnsafeBufferPointer { s in
            recipientKey.withUnsafeBufferPointer { r in
                recipientSecret.withUnsafeBufferPointer { rSecret in
                    let E = s.baseAddress!, R = r.baseAddress!
                    hintKey.withUnsafeBufferPointer { hash(hint, 8, [(E, 32), (R, 32)], key: $0.baseAddress!, $0.count) }
                    guard sodium_memcmp(hint, E + 32, 8) == 0 else { return nil }
                    _ = crypto_scalarmult(shared, rSecret.baseAddress!, E)
                    keyKey.withUnsafeBufferPointer { hash(okm, 64, [(UnsafePointer(shared), 32), (E, 32), (R, 32)], key: $0.baseAddress!, $0.count) }
                    fillAD(messageID: messageID, timestamp: timestamp, ephemeral: E)
                    var innerLength: UInt64 = 0
                    let rc = crypto_aead_xchacha20poly1305_ietf_decrypt(inner, &innerLength, nil, E + 40, UInt64(s.count - 40),
                                                                        ad, 89, okm + 32, okm)
                    defer {
                        sodium_memzero(shared, 32)
                        sodium_memzero(okm, 64)
                        sodium_memzero(inner, Int(innerLength))
                    }
                    guard rc == 0 else { return nil }
                    var bodyLength = 0
                    guard sodium_unpad(&bodyLength, inner + 48, Int(innerLength) - 48, Int(innerLength) - 48) == 0 else { return nil }
                    authenticator(peer: inner, secret: rSecret.baseAddress!, sender: inner, recipient: R,
                                  body: inner + 48, bodyLength: bodyLength)
                    guard sodium_memcmp(auth, inner + 32, 16) == 0 else { return nil }
                    return Array(UnsafeBufferPointer(start: inner + 48, count: bodyLength))
                }
            }
        }
    }
}
