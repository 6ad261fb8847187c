import Testing
@testable import YaOKSupport
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The count of messages sealed to a contact's long-term key (docs/PROTOCOL.md §13.5) is a
/// warning the user must still see after a restart, and from `yaok status` run as another
/// process: it lives in the store, sealed, and goes with the contact.
@Suite struct LongTermSealCountTests {
    /// Alice sends twice to Bob before he announced a key, closes and reopens her node from
    /// its data directory: the count is still 2 (it was 0, kept in memory only).
    @Test func theCountSurvivesAReopen() throws {
        let dirA = TempDir(), dirB = TempDir()
        defer { dirA.remove(); dirB.remove() }
        var options = fastOptions()
        options.forwardSecrecy = true
        let alice = try Node(dataDirectory: dirA.path, options: options)
        _ = try alice.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        let bob = try Node(dataDirectory: dirB.path, options: options)
        _ = try bob.setup(name: "Bob", pin: testPIN, confirmation: testPIN)
        let bobID = try alice.addContact(card: bob.identity().card.text).id  // version 1: no prekey
        bob.close()
        _ = try alice.send(to: bobID, text: "first")
        _ = try alice.send(to: bobID, text: "second")
        #expect(try alice.forwardSecrecy(bobID).longTermSeals == 2)
        alice.close()

        let reopened = try Node(dataDirectory: dirA.path, options: options)
        defer { reopened.close() }
        try reopened.unlock(pin: testPIN)
        let status = try reopened.forwardSecrecy(bobID)
        #expect(status.longTermSeals == 2 && !status.active)
        #expect(status.summary == "forward secrecy: not yet (no receiver key from this contact; 2 sealed to the long-term key)")
    }

    /// The count is sealed (another key does not read it) and its row goes with the contact.
    @Test func theCountIsSealedAndGoesWithTheContact() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let cipher = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
        let store = try Store(directory: dir.path)
        defer { store.close() }
        let card = try ContactCard(text: try Identity(name: "Bob").card.text)
        let bob = try store.insertContact(card, lookup: cipher.lookup(card.publicIdentity.keyBytes), cipher: cipher, now: 1)
        #expect(try store.longTermSeals(contactID: bob, cipher: cipher) == 0)
        try store.countLongTermSeal(contactID: bob, cipher: cipher)
        try store.countLongTermSeal(contactID: bob, cipher: cipher)
        #expect(try store.longTermSeals(contactID: bob, cipher: cipher) == 2)
        let other = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
        #expect(throws: YaOKError(.corruptStore)) { _ = try store.longTermSeals(contactID: bob, cipher: other) }
        try store.deleteContact(bob, withMessages: false)
        #expect(try store.db.rows("SELECT count(*) FROM long_term_seals") { $0.int64(0) } == [0])
    }
}
