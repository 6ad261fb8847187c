import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A vault row sealed once, outside this code, that every later version must keep opening:
/// an on-disk format change (the payload layout, the associated data and the KDF costs it
/// binds, the column layout) cannot slip through unnoticed.
///
/// Computed with libsodium through Python ctypes, independently of the Swift code:
///   key     = crypto_pwhash(32, PIN "135790", salt 00..0f, ops 1, mem 8192, ARGON2ID13)
///   payload = 01 || identity secrets 40..7f || database key a0..bf || "Vector Vera"
///   ad      = "YaOK-vault-v1:pin" || ops (u64 BE) || mem (u64 BE)
///   row     = XChaCha20-Poly1305(key, nonce 10..27, ad, payload)
@Suite struct VaultVectorTests {
    static let pin = "135790"
    static let salt = Array(0x00...0x0f).map(UInt8.init)
    static let nonce = Array(0x10...0x27).map(UInt8.init)
    static let identitySecrets = Array(0x40...0x7f).map(UInt8.init)
    static let databaseKey = Array(0xa0...0xbf).map(UInt8.init)
    static let ciphertext = Hex.decode("""
        25386fcf2a9f61530e90135a3d582f38f1ea003689d507fc7ecb8b264a5f6bb1c3c91e123760b6f254c3859ecda7ed236cd8ecff37ba\
        3e777f9c252661806d2cb59392b5fa760f6e10f130151fa09a10207b98babfea6246ff3e83a0486a93bf387718ddedae06b12e9ca827\
        2b5c80f4e38dbfa550194fc96dc30089
        """)!

    /// The row exactly as migration 1's `vault` table holds it.
    static func insertRow(into db: Database) throws {
        try db.query("INSERT OR REPLACE INTO vault (kind, salt, ops_limit, mem_limit, nonce, ciphertext) VALUES ('pin', ?, 1, 8192, ?, ?)",
                     [.blob(salt), .blob(nonce), .blob(ciphertext)])
    }

    @Test func theStoredRowOpensWithItsPIN() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try Store(directory: dir.path)
        defer { store.close() }
        try Self.insertRow(into: store.db)
        let vault = try #require(try store.vault(.pin))
        let contents = try #require(try vault.open(pin: SecureBytes(utf8: Self.pin)))
        #expect(contents.name == "Vector Vera")
        #expect(contents.identitySecrets.copyBytes() == Self.identitySecrets)
        #expect(contents.databaseKey.copyBytes() == Self.databaseKey)
        #expect(try vault.open(pin: SecureBytes(utf8: "135791")) == nil)
    }

    /// Each bound cost is part of the seal: a row whose costs were rewritten does not open.
    @Test func theCostsAreBound() throws {
        for (ops, mem) in [(2, 8192), (1, 16384)] {
            let vault = SealedVault(kind: .pin, salt: Self.salt, opsLimit: UInt64(ops), memLimit: mem,
                                    nonce: Self.nonce, ciphertext: Self.ciphertext, deviceCheck: nil)
            #expect(try vault.open(pin: SecureBytes(utf8: Self.pin)) == nil)
        }
    }

    /// A node whose store holds only this row unlocks with the PIN, as that identity.
    @Test func aNodeUnlocksWithTheVectorVault() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try Store(directory: dir.path)
        try Self.insertRow(into: store.db)
        store.close()
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        defer { node.close() }
        #expect(throws: YaOKError(.wrongPIN)) { try node.unlock(pin: "000000") }
        try node.unlock(pin: Self.pin)
        let expected = try Identity(name: "Vector Vera", secrets: SecureBytes(copying: Self.identitySecrets))
        #expect(try node.profile().publicIdentity == expected.publicIdentity)
        #expect(try node.profile().name == "Vector Vera")
    }
}
