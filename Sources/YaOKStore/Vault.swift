internal import CSodium
import Glibc
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

    /// Whether these costs are at least the production minimum (`.standard` in both passes
    /// and memory). A vault below it is refused, at setup and at unlock, unless the process
    /// opted in to test-only costs (`testCostsAllowedByEnvironment`, or the package-only
    /// `Node.Options.allowTestOnlyKDFCosts` that the test suites set).
    public var meetsProductionMinimum: Bool {
        opsLimit >= PINHashing.standard.opsLimit && memLimit >= PINHashing.standard.memLimit
    }

    /// TEST ONLY: libsodium's minimum costs (1 pass, 8 KiB), so test suites that set up
    /// many nodes stay fast. Offers no protection to a PIN; a vault sealed with it opens only
    /// in a process that opted in to test-only costs. Not part of the public API.
    package static let insecureFastForTestsOnly = PINHashing(opsLimit: UInt64(crypto_pwhash_OPSLIMIT_MIN),
                                                             memLimit: Int(crypto_pwhash_MEMLIMIT_MIN))

    /// The test-only opt-in for C and Python test suites: `YAOK_TEST_INSECURE_KDF=1` in the
    /// environment, read once, at the first use. Never set it for real data: it lets a vault
    /// sealed with costs below the production minimum be created and opened.
    package static let testCostsAllowedByEnvironment: Bool = {
        guard let value = getenv(testCostsVariable) else { return false }
        return testCostsAllowed(environmentValue: String(validatingCString: value))
    }()

    package static let testCostsVariable = "YAOK_TEST_INSECURE_KDF"

    /// Only the exact value "1" opts in.
    package static func testCostsAllowed(environmentValue: String?) -> Bool { environmentValue == "1" }
}

/// What the vault protects: the identity's secret keys, the random database key that all
/// encrypted columns derive from, and the display name.
package final class VaultContents: Sendable {
    package let name: String
    package let identitySecrets: SecureBytes
    package let databaseKey: SecureBytes

    package static let databaseKeyLength = 32

    package init(name: String, identitySecrets: SecureBytes, databaseKey: SecureBytes) {
        self.name = name
        self.identitySecrets = identitySecrets
        self.databaseKey = databaseKey
    }

    /// version (1) || identity secrets (64) || database key (32) || name (UTF-8), in
    /// guarded memory.
    func payload() throws -> SecureBytes {
        let name = Array(self.name.utf8)
        let fixed = 1 + Identity.secretsLength + Self.databaseKeyLength
        let out = try SecureBytes(count: fixed + name.count)
        out.withUnsafeMutableBytes { o in
            o[0] = 1
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
        guard version == 1, let name = String(validating: nameBytes, as: UTF8.self) else { throw bad }
        return VaultContents(name: name, identitySecrets: secrets, databaseKey: key)
    }
}

/// One sealed copy of the vault contents, as stored in the `vault` table. There are at most
/// two: under the PIN (always) and under a platform key (optional). Opening the PIN copy is
/// the PIN check, so the store holds no separate verifier and certainly not the PIN.
///
/// The PIN copy may be bound to a device secret that the app keeps in hardware (Android
/// Keystore, Secure Enclave, TPM): its key is then BLAKE2b-256 keyed with
/// "YaOK-vault-device-v1" over Argon2id(PIN) || device secret, so the file alone is useless
/// to an offline PIN search. `deviceCheck` (BLAKE2b-128 keyed with the device secret over
/// "YaOK-device-check-v1" || salt) tells a missing or wrong device secret apart from a wrong
/// PIN without saying anything about the PIN.
package struct SealedVault: Sendable {
    package enum Kind: String, Sendable { case pin, platform }

    let kind: Kind
    let salt: [UInt8]
    let opsLimit: UInt64
    let memLimit: Int
    let nonce: [UInt8]
    let ciphertext: [UInt8]
    /// nil: not bound to a device secret.
    let deviceCheck: [UInt8]?

    package static let platformKeyLength = 32
    package static let deviceSecretLength = 32

    package var hashing: PINHashing { PINHashing(opsLimit: opsLimit, memLimit: memLimit) }
    package var isDeviceBound: Bool { deviceCheck != nil }

    /// Whether `deviceSecret` is the one this vault is bound to (true for a vault that is
    /// not bound, whatever is passed).
    package func deviceSecretMatches(_ deviceSecret: SecureBytes) -> Bool {
        guard let deviceCheck else { return true }
        let expected = SealedVault.deviceCheck(deviceSecret, salt: salt)
        return expected.count == deviceCheck.count && sodium_memcmp(expected, deviceCheck, expected.count) == 0
    }

    /// Seals under the PIN or passphrase: Argon2id(secret NFC-normalised, fresh 16-byte salt),
    /// mixed with `deviceSecret` if given → XChaCha20-Poly1305 key.
    package static func seal(_ contents: VaultContents, pin: String, hashing: PINHashing,
                             deviceSecret: SecureBytes? = nil) throws -> SealedVault {
        guard hashing.isWithinBounds else {
            throw YaOKError(.invalidArgument, "PIN hashing costs must be 1 to \(PINHashing.maxOpsLimit) passes over 8 KiB to 256 MiB")
        }
        let salt = Sodium.randomBytes(Int(crypto_pwhash_SALTBYTES))
        var key = try derivePINKey(pin, salt: salt, hashing: hashing)
        var check: [UInt8]?
        if let deviceSecret {
            key = try bind(key, to: deviceSecret)
            check = deviceCheck(deviceSecret, salt: salt)
        }
        return try seal(contents, kind: .pin, key: key, salt: salt, hashing: hashing, deviceCheck: check)
    }

    /// Seals under a platform key (32 random bytes from the OS keystore): it has full
    /// entropy already, so a keyed BLAKE2b is enough to turn it into a vault key.
    package static func seal(_ contents: VaultContents, platformKey: SecureBytes) throws -> SealedVault {
        let key = try FieldCipher.derive(from: platformKey, label: "YaOK-vault-platform-v1")
        return try seal(contents, kind: .platform, key: key, salt: [], hashing: PINHashing(opsLimit: 0, memLimit: 0),
                        deviceCheck: nil)
    }

    /// nil when the PIN is wrong. A bound vault needs its device secret (check it first with
    /// `deviceSecretMatches`); an unbound one ignores `deviceSecret`.
    package func open(pin: String, deviceSecret: SecureBytes? = nil) throws -> VaultContents? {
        guard hashing.isWithinBounds else { throw YaOKError(.corruptStore, "The data store is corrupt: unreadable vault") }
        var key = try SealedVault.derivePINKey(pin, salt: salt, hashing: hashing)
        if isDeviceBound {
            guard let deviceSecret else { return nil }
            key = try SealedVault.bind(key, to: deviceSecret)
        }
        return try open(key: key)
    }

    package func open(platformKey: SecureBytes) throws -> VaultContents? {
        try open(key: try FieldCipher.derive(from: platformKey, label: "YaOK-vault-platform-v1"))
    }

    // MARK: -

    private static func seal(_ contents: VaultContents, kind: Kind, key: SecureBytes, salt: [UInt8],
                             hashing: PINHashing, deviceCheck: [UInt8]?) throws -> SealedVault {
        let payload = try contents.payload()
        let nonce = Sodium.randomBytes(Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES))
        let ad = associatedData(kind, hashing, deviceCheck)
        var ciphertext = [UInt8](repeating: 0, count: payload.count + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES))
        payload.withUnsafeBytes { p in
            key.withUnsafeBytes { k in
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    &ciphertext, nil, p.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(p.count),
                    ad, UInt64(ad.count), nil, nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return SealedVault(kind: kind, salt: salt, opsLimit: hashing.opsLimit, memLimit: hashing.memLimit,
                           nonce: nonce, ciphertext: ciphertext, deviceCheck: deviceCheck)
    }

    /// nil when the key is wrong (or the row was altered): the caller decides what that means.
    private func open(key: SecureBytes) throws -> VaultContents? {
        let tag = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
        guard ciphertext.count > tag, nonce.count == Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES) else {
            throw YaOKError(.corruptStore, "The data store is corrupt: unreadable vault")
        }
        let payload = try SecureBytes(count: ciphertext.count - tag)
        let ad = SealedVault.associatedData(kind, hashing, deviceCheck)
        let rc = payload.withUnsafeMutableBytes { p in
            key.withUnsafeBytes { k in
                crypto_aead_xchacha20poly1305_ietf_decrypt(
                    p.baseAddress!.assumingMemoryBound(to: UInt8.self), nil, nil, ciphertext, UInt64(ciphertext.count),
                    ad, UInt64(ad.count), nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0 else { return nil }
        return try VaultContents.parse(payload)
    }

    /// Binds the kind, the KDF costs and, for a bound vault, the device check: lowering the
    /// stored costs, or unbinding the vault, breaks the seal. (An unbound vault's associated
    /// data is the same as before device binding existed.)
    private static func associatedData(_ kind: Kind, _ hashing: PINHashing, _ deviceCheck: [UInt8]?) -> [UInt8] {
        var ad = Array("YaOK-vault-v1:\(kind.rawValue)".utf8) + RowAD.bigEndian(hashing.opsLimit)
            + RowAD.bigEndian(UInt64(hashing.memLimit))
        if let deviceCheck { ad += Array(":device".utf8) + deviceCheck }
        return ad
    }

    /// BLAKE2b-256, keyed with "YaOK-vault-device-v1", over Argon2id output || device secret.
    private static func bind(_ pinKey: SecureBytes, to deviceSecret: SecureBytes) throws -> SecureBytes {
        let input = try SecureBytes(count: pinKey.count + deviceSecret.count)
        input.withUnsafeMutableBytes { i in
            pinKey.withUnsafeBytes { i.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            deviceSecret.withUnsafeBytes { (i.baseAddress! + pinKey.count).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
        let label = Array("YaOK-vault-device-v1".utf8)
        let out = try SecureBytes(count: 32)
        out.withUnsafeMutableBytes { o in
            input.withUnsafeBytes { i in
                _ = crypto_generichash(o.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                                       i.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(i.count),
                                       label, label.count)
            }
        }
        return out
    }

    /// BLAKE2b-128 keyed with the device secret over "YaOK-device-check-v1" || salt.
    private static func deviceCheck(_ deviceSecret: SecureBytes, salt: [UInt8]) -> [UInt8] {
        let input = Array("YaOK-device-check-v1".utf8) + salt
        var out = [UInt8](repeating: 0, count: 16)
        deviceSecret.withUnsafeBytes { k in
            _ = crypto_generichash(&out, 16, input, UInt64(input.count),
                                   k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
        }
        return out
    }

    /// crypto_pwhash with Argon2id 1.3 into guarded memory, over the secret's UTF-8 in NFC
    /// (the same text typed on another keyboard hashes the same; digits are unchanged).
    private static func derivePINKey(_ pin: String, salt: [UInt8], hashing: PINHashing) throws -> SecureBytes {
        guard salt.count == Int(crypto_pwhash_SALTBYTES) else {
            throw YaOKError(.corruptStore, "The data store is corrupt: unreadable vault")
        }
        var password = pin._nfcCodeUnits
        defer { Sodium.wipe(&password) }
        let length = password.count
        if password.isEmpty { password = [0] }  // a valid pointer for an empty PIN; length stays 0
        let key = try SecureBytes(count: 32)
        let rc = key.withUnsafeMutableBytes { k in
            password.withUnsafeBufferPointer { pw in
                crypto_pwhash(k.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                              UnsafeRawPointer(pw.baseAddress!).assumingMemoryBound(to: CChar.self), UInt64(length),
                              salt, hashing.opsLimit, hashing.memLimit, crypto_pwhash_ALG_ARGON2ID13)
            }
        }
        guard rc == 0 else { throw YaOKError(.outOfMemory, "Not enough memory to check the PIN") }
        return key
    }
}
