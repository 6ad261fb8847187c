import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKCrypto
@testable import YaOKStore

/// The node's prekeys in the store (docs/PROTOCOL.md §13.4; migration 16): one per UTC day,
/// sealed like the receiver keys, erased at day D + 23 and not before.
@Suite struct PrekeyStoreTests {
    let day: Int64 = 86_400_000

    @Test func onePerDaySealedAndErasedAtItsBound() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let cipher = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
        let store = try Store(directory: dir.path)
        defer { store.close() }
        let first = try store.prekey(day: 20_000, cipher: cipher)
        #expect(try store.prekey(day: 20_000, cipher: cipher).key == first.key)
        #expect(first.key.id == ReceiverKey.prekeyID(day: 20_000) && first.key.isPrekey)
        _ = try store.prekey(day: 20_001, cipher: cipher)
        #expect(try store.prekeys(cipher: cipher).map(\.key.id) == [ReceiverKey.prekeyID(day: 20_000), ReceiverKey.prekeyID(day: 20_001)])
        // Sealed: under another database key nothing opens.
        let other = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
        #expect(throws: YaOKError(.corruptStore)) { _ = try store.prekeys(cipher: other) }

        #expect(try store.expirePrekeys(nowMs: 20_023 * day - 1) == 0)
        #expect(try store.expirePrekeys(nowMs: 20_023 * day) == 1)
        #expect(try store.prekeys(cipher: cipher).map(\.key.id) == [ReceiverKey.prekeyID(day: 20_001)])
        #expect(try store.expirePrekeys(nowMs: 20_024 * day) == 1)
        #expect(try store.prekeys(cipher: cipher).isEmpty)
    }

    /// Reading the prekeys costs no X25519: the row keeps the public key beside the secret
    /// (both sealed), so a packet from a contact that matches no per-contact key (every
    /// long-term seal, and junk a relay made under a replayed routing tag) costs 23 AEAD
    /// opens and selector hashes, not 23 base multiplications. A row whose sealed public key
    /// is not the secret's shows that it is read, not recomputed.
    @Test func readingThePrekeysComputesNoPublicKey() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let cipher = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
        let store = try Store(directory: dir.path)
        defer { store.close() }
        let made = try store.prekey(day: 20_000, cipher: cipher)
        let stored = try store.db.rows("SELECT sealed FROM prekeys") { $0.blob(0) }
        #expect(try stored.map { try cipher.open($0, ad: RowAD.prekey(keyID: made.key.id)).count } == [64])
        let id = ReceiverKey.prekeyID(day: 20_001)
        let marker = [UInt8](repeating: 0x42, count: 32)
        let plain = [UInt8](repeating: 7, count: 32) + marker
        try store.db.query("INSERT INTO prekeys (key_id, sealed) VALUES (?, ?)",
                           [.int(Int64(id)), .blob(try cipher.seal(plain, ad: RowAD.prekey(keyID: id)))])
        let read = try store.prekeys(cipher: cipher)
        #expect(read.map(\.key) == [made.key, try ReceiverKey(id: id, publicKey: marker)])
    }
}
