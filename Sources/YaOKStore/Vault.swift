internal import CSodium
import YaOKSupport
import YaOKWire
import YaOKCrypto

/// How a PIN becomes a key: Argon2id (crypto_pwhash) with these costs.
public struct PINHashing: Sendable, Equatable {
    /// Argon2id passes over memory (crypto_pwhash opslimit).
    public let opsLimit: UInt64
    /// Argon2id memory in bytes (crypto_pwhash memlimit).
    public let memLimit: Int

    public init(opsLimit: UInt64, memLimit: Int) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    /// The production cost: Argon2id, 64 MiB, 2 passes, 1 lane (libsodium's INTERACTIVE).
    /// A 6-digit PIN has only 10^6 values, so no KDF can stop an offline search on its own;
    /// what protects it is that the sealed vault is only on the device, the lockout, and
    /// that every guess costs 64 MiB of memory bandwidth (GPU/ASIC farms pay in RAM, not
    /// just cycles). 64 MiB is the floor and fits a phone's budget; 2 passes keep
    /// one verification near the seed's 100 ms on a phone-class core. Raise opsLimit, not
    /// memory, if devices get faster: the parameters are stored with each vault.
    public static let standard = PINHashing(opsLimit: UInt64(crypto_pwhash_OPSLIMIT_INTERACTIVE),
                                            memLimit: Int(crypto_pwhash_MEMLIMIT_INTERACTIVE))

    /// The costs a PIN vault may carry: from libsodium's minimum up to 16 passes over
    /// 256 MiB (8 and 4 times `.standard`). The costs are read back from the file, which
    /// an attacker may have written: outside these bounds the vault is refused as corrupt
    /// instead of letting the unlock allocate gigabytes or spin for hours.
    public static let maxOpsLimit: UInt64 = 16
    public static let maxMemLimit = 256 << 20

    public var isWithinBounds: Bool {
        (UInt64(crypto_pwhash_OPSLIMIT_MIN)...PINHashing.maxOpsLimit).contains(opsLimit)
            && (Int(crypto_pwhash_MEMLIMIT_MIN)...PINHashing.maxMemLimit).contains(memLimit)
    }

    /// TEST ONLY: libsodium's minimum costs (1 pass, 8 KiB), so test suites that set up
    /// many nodes stay fast. Offers no protection to a PIN; never use it for real data.
    public static let insecureFastForTestsOnly = PINHashing(opsLimit: UInt64(crypto_pwhash_OPSLIMIT_MIN),
                                                            memLimit: Int(crypto_pwhash_MEMLIMIT_MIN))
}

/// What the vault protects: the identity's secret keys, the random database key that all
/// encrypted columns derive from, and the display name.
package final class VaultContents: Sendable {
    package let name: String
    package let identitySecrets: SecureBytes
    package let databaseKey: SecureBytes

    /// The payload format the vault was opened from. 2 (written by every seal since
    /// schema 7) says the store's clear columns are authenticated from the start; 1 is a
    /// store set up before, whose rows are adopted at its first unlock (Store+Integrity).
    /// Being inside the seal, the format cannot be lowered without the PIN or platform key.
    package let format: UInt8
    /// Set when the vault was opened from format 1: the same contents resealed in the
    /// current format (same key, salt and costs, a fresh nonce), for the store to save.
    package let upgradedVault: SealedVault?

    package static let databaseKeyLength = 32
    package static let currentFormat: UInt8 = 2

    package convenience init(name: String, identitySecrets: SecureBytes, databaseKey: SecureBytes) {
        self.init(name: name, identitySecrets: identitySecrets, databaseKey: databaseKey,
                  format: VaultContents.currentFormat, upgradedVault: nil)
    }

    init(name: String, identitySecrets: SecureBytes, databaseKey: SecureBytes, format: UInt8, upgradedVault: SealedVault?) {
        self.name = name
        self.identitySecrets = identitySecrets
        self.databaseKey = databaseKey
        self.format = format
        self.upgradedVault = upgradedVault
    }

    /// format (1 byte, now 2) || identity secrets (64) || database key (32) || name (UTF-8),
    /// in guarded memory. Format 1 had the same layout.
    func payload() throws -> SecureBytes {
        let name = Array(self.name.utf8)
        let fixed = 1 + Identity.secretsLength + Self.databaseKeyLength
        let out = try SecureBytes(count: fixed + name.count)
        out.withUnsafeMutableBytes { o in
            o[0] = VaultContents.currentFormat
            identitySecrets.withUnsafeBytes { (o.baseAddress! + 1).copyMemory(from: $0.baseAddress!, byteCount: Identity.secretsLength) }
            databaseKey.withUnsafeBytes { (o.baseAddress! + 1 + Identity.secretsLength).copyMemory(from: $0.baseAddress!, byteCount: Self.databaseKeyLength) }
            for (i, b) in name.enumerated() { o[fixed + i] = b }
        }
        return out
    }

    static func parse(_ payload: SecureBytes) throws -> VaultContents {
        let fixed = 1 + Identity.secretsLength + databaseKeyLength
        let bad = YaOKError(.corruptStore, "The data store is corrupt: unreadable vault")
        guard payload.count >= fixed else { throw bad }
        let secrets = try SecureBytes(count: Identity.secretsLength)
        let key = try SecureBytes(count: databaseKeyLength)
        let (version, nameBytes) = payload.withUnsafeBytes { p -> (UInt8, [UInt8]) in
            secrets.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: p[1..<1 + Identity.secretsLength])) }
            key.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: p[(1 + Identity.secretsLength)..<fixed])) }
            return (p[0], Array(p[fixed...]))
        }
        guard (1...currentFormat).contains(version), let name = String(validating: nameBytes, as: UTF8.self) else { throw bad }
        return VaultContents(name: name, identitySecrets: secrets, databaseKey: key, format: version, upgradedVault: nil)
    }
}

/// One sealed copy of the vault contents, as stored in the `vault` table. There are at most
/// two: under the PIN (always) and under a platform key (optional). Opening the PIN copy is
/// the PIN check, so the store holds no separate verifier and certainly not the PIN.
package struct SealedVault: Sendable {
    package enum Kind: String, Sendable { case pin, platform }

    let kind: Kind
    let salt: [UInt8]
    let opsLimit: UInt64
    let memLimit: Int
    let nonce: [UInt8]
    let ciphertext: [UInt8]

    package static let platformKeyLength = 32

    /// Seals under the PIN: Argon2id(PIN, fresh 16-byte salt) → XChaCha20-Poly1305 key.
    /// The PIN (or passphrase) stays in guarded memory from the caller to Argon2id.
    package static func seal(_ contents: VaultContents, pin: SecureBytes, hashing: PINHashing) throws -> SealedVault {
        guard hashing.isWithinBounds else {
            throw YaOKError(.invalidArgument, "PIN hashing costs must be 1 to \(PINHashing.maxOpsLimit) passes over 8 KiB to 256 MiB")
        }
        let salt = Sodium.randomBytes(Int(crypto_pwhash_SALTBYTES))
        let key = try derivePINKey(pin, salt: salt, hashing: hashing)
        return try seal(contents, kind: .pin, key: key, salt: salt, hashing: hashing)
    }

    /// Seals under a platform key (32 random bytes from the OS keystore): it has full
    /// entropy already, so a keyed BLAKE2b is enough to turn it into a vault key.
    package static func seal(_ contents: VaultContents, platformKey: SecureBytes) throws -> SealedVault {
        let key = try FieldCipher.derive(from: platformKey, label: "YaOK-vault-platform-v1")
        return try seal(contents, kind: .platform, key: key, salt: [], hashing: PINHashing(opsLimit: 0, memLimit: 0))
    }

    package func open(pin: SecureBytes) throws -> VaultContents? {
        let hashing = PINHashing(opsLimit: opsLimit, memLimit: memLimit)
        guard hashing.isWithinBounds else { throw YaOKError(.corruptStore, "The data store is corrupt: unreadable vault") }
        return try open(key: try SealedVault.derivePINKey(pin, salt: salt, hashing: hashing))
    }

    package func open(platformKey: SecureBytes) throws -> VaultContents? {
        try open(key: try FieldCipher.derive(from: platformKey, label: "YaOK-vault-platform-v1"))
    }

    // MARK: -

    private static func seal(_ contents: VaultContents, kind: Kind, key: SecureBytes, salt: [UInt8],
                             hashing: PINHashing) throws -> SealedVault {
        let payload = try contents.payload()
        let nonce = Sodium.randomBytes(Sodium.aeadNonceLength)
        let ad = associatedData(kind, hashing)
        let ciphertext = try payload.withUnsafeBytes { p in
            try key.withUnsafeBytes { try Sodium.aeadSeal(p, ad: ad, nonce: nonce, key: $0) }
        }
        return SealedVault(kind: kind, salt: salt, opsLimit: hashing.opsLimit, memLimit: hashing.memLimit,
                           nonce: nonce, ciphertext: ciphertext)
    }

    /// nil when the key is wrong (or the row was altered): the caller decides what that means.
    private func open(key: SecureBytes) throws -> VaultContents? {
        guard ciphertext.count > Sodium.aeadTagLength, nonce.count == Sodium.aeadNonceLength else {
            throw YaOKError(.corruptStore, "The data store is corrupt: unreadable vault")
        }
        // Opened straight into guarded memory: the payload never sits in an ordinary array.
        let payload = try SecureBytes(count: ciphertext.count - Sodium.aeadTagLength)
        let ad = SealedVault.associatedData(kind, PINHashing(opsLimit: opsLimit, memLimit: memLimit))
        let opened = payload.withUnsafeMutableBytes { p in
            key.withUnsafeBytes { Sodium.aeadOpen(ciphertext[...], ad: ad, nonce: nonce, key: $0, into: p) }
        }
        guard opened else { return nil }
        let contents = try VaultContents.parse(payload)
        guard contents.format < VaultContents.currentFormat else { return contents }
        let upgraded = try SealedVault.seal(contents, kind: kind, key: key, salt: salt,
                                            hashing: PINHashing(opsLimit: opsLimit, memLimit: memLimit))
        return VaultContents(name: contents.name, identitySecrets: contents.identitySecrets, databaseKey: contents.databaseKey,
                             format: contents.format, upgradedVault: upgraded)
    }

    /// Binds the kind and the KDF costs: lowering the stored costs breaks the seal.
    private static func associatedData(_ kind: Kind, _ hashing: PINHashing) -> [UInt8] {
        Array("YaOK-vault-v1:\(kind.rawValue)".utf8) + RowAD.bigEndian(hashing.opsLimit) + RowAD.bigEndian(UInt64(hashing.memLimit))
    }

    /// crypto_pwhash with Argon2id 1.3 into guarded memory, reading the PIN where it is.
    private static func derivePINKey(_ pin: SecureBytes, salt: [UInt8], hashing: PINHashing) throws -> SecureBytes {
        guard salt.count == Int(crypto_pwhash_SALTBYTES) else {
            throw YaOKError(.corruptStore, "The data store is corrupt: unreadable vault")
        }
        let key = try SecureBytes(count: 32)
        let rc = key.withUnsafeMutableBytes { k in
            // An empty PIN still has a valid pointer (SecureBytes allocates at least a byte).
            pin.withUnsafeBytes { pw in
                crypto_pwhash(k.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                              pw.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(pw.count),
                              salt, hashing.opsLimit, hashing.memLimit, crypto_pwhash_ALG_ARGON2ID13)
            }
        }
        guard rc == 0 else { throw YaOKError(.outOfMemory, "Not enough memory to check the PIN") }
        return key
    }
}
