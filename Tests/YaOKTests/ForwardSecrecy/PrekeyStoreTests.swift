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
}
