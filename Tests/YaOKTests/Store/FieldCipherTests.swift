import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The column cipher's nonces: a plaintext scan of the file cannot see a nonce reused (the
/// ciphertexts still look random), so these tests look at the nonces themselves.
@Suite struct FieldCipherTests {
    /// Every sealed value the store holds: names, keys, titles, bodies, the link key.
    private func sealedColumns(_ store: Store) throws -> [[UInt8]] {
        var values: [[UInt8]] = []
        for sql in ["SELECT name FROM contacts", "SELECT keys FROM contacts", "SELECT title FROM conversations",
                    "SELECT body FROM messages", "SELECT sealed_secret FROM link_key", "SELECT certificate FROM link_key"] {
            values += try store.db.rows(sql) { $0.blob(0) }
        }
        return values
    }

    @Test func everyStoredNonceIsFreshAndEqualTextsDiffer() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        let carol = try node.addContact(card: try cardText("Carol"))
        for contact in [bob.id, carol.id] {
            for _ in 0..<3 { _ = try node.send(to: contact, text: "the same text") }
            _ = try node.send(to: contact, text: "another text")
        }
        _ = try node.renameContact(bob.id, to: "Carol")  // the same name sealed in two rows
        node.close()

        let store = try Store(directory: dir.path)
        defer { store.close() }
        let values = try sealedColumns(store)
        #expect(values.count >= 2 * 3 + 8)
        let nonces = values.map { Array($0.prefix(FieldCipher.nonceLength)) }
        #expect(Set(nonces).count == nonces.count, "a nonce was used twice")
        let bodies = try store.db.rows("SELECT body FROM messages") { $0.blob(0) }
        #expect(Set(bodies).count == bodies.count, "equal texts gave equal ciphertexts")
        let names = try store.db.rows("SELECT name FROM contacts") { Array($0.blob(0).dropFirst(FieldCipher.nonceLength)) }
        #expect(Set(names).count == names.count)
    }

    /// The same value sealed twice under one key, directly.
    @Test func sealingTwiceGivesTwoNonces() throws {
        let cipher = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
        let a = try cipher.seal(Array("x".utf8), ad: [1])
        let b = try cipher.seal(Array("x".utf8), ad: [1])
        #expect(a.prefix(FieldCipher.nonceLength) != b.prefix(FieldCipher.nonceLength))
        #expect(a != b)
        #expect(try cipher.open(a, ad: [1]) == Array("x".utf8))
        #expect(throws: YaOKError(.corruptStore)) { try cipher.open(a, ad: [2]) }
    }
}
