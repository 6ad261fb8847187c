import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Someone who can write the database file but has no keys swaps two people's rows, so
/// that Alice's conversation would show under Bob's name: every swapped value fails to open.
@Suite struct RowSwapTests {
    @Test func swappingTwoPeoplesRowsIsDetected() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var node: Node? = try makeNode(dir)
        let alice = try #require(node).addContact(card: try cardText("Alice"))
        let bob = try #require(node).addContact(card: try cardText("Bobby"))
        _ = try node?.send(to: alice.id, text: "for Alice only")
        node?.close()
        node = nil

        // Move Bob's name, keys, lookup and title onto Alice's row (and back), keeping the
        // row ids, which her messages are bound to.
        let store = try Store(directory: dir.path)
        try store.db.transaction {
            let (a, b) = (alice.id, bob.id)
            try store.db.execute("""
                CREATE TEMP TABLE c AS SELECT id, name, keys FROM contacts;
                CREATE TEMP TABLE v AS SELECT id, peer_lookup, title FROM conversations;
                UPDATE conversations SET peer_lookup = x'00' WHERE id = \(a);
                UPDATE conversations SET peer_lookup = (SELECT peer_lookup FROM v WHERE id = \(a)),
                    title = (SELECT title FROM v WHERE id = \(a)) WHERE id = \(b);
                UPDATE conversations SET peer_lookup = (SELECT peer_lookup FROM v WHERE id = \(b)),
                    title = (SELECT title FROM v WHERE id = \(b)) WHERE id = \(a);
                UPDATE contacts SET name = (SELECT name FROM c WHERE id = \(a + b) - contacts.id),
                    keys = (SELECT keys FROM c WHERE id = \(a + b) - contacts.id);
                """)
        }
        store.close()

        let reopened = try Node(dataDirectory: dir.path, options: fastOptions())
        try reopened.unlock(pin: testPIN)
        #expect(throws: YaOKError(.corruptStore)) { try reopened.contacts() }
        #expect(throws: YaOKError(.corruptStore)) { try reopened.contact(alice.id) }
    }
}
