import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct NodeContactsTests {
    @Test func previewAddListShowVerifyRename() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bobCard = try cardText("Bob")
        let preview = try node.previewContact(card: bobCard)
        #expect(preview.name == "Bob" && preview.existingContactID == nil)
        #expect(try node.contacts().isEmpty)  // preview stores nothing

        let bob = try node.addContact(card: bobCard)
        #expect(bob.name == "Bob" && !bob.verified && bob.connection == .neverConnected)
        #expect(bob.fingerprint == preview.fingerprint)
        #expect(try node.previewContact(card: bobCard).existingContactID == bob.id)
        #expect(errorMessage { _ = try node.addContact(card: bobCard) } == "Bob is already in your contacts")
        #expect(try node.contacts().count == 1)
        #expect(throws: YaOKError(.invalidCard)) { try node.addContact(card: "https://example.com") }
        #expect(throws: YaOKError(.invalidArgument)) { try node.addContact(card: try node.identity().card.text) }
        // The node's card is version 2 (with today's prekey, §13.4), of the same keys and name.
        let shown = try node.profile(), plain = try node.identity().card
        #expect(shown.version == 2 && shown.prekey != nil && shown.publicIdentity == plain.publicIdentity && shown.name == plain.name)

        _ = try node.addContact(card: try cardText("alice b"))
        #expect(try node.contacts().map(\.name) == ["alice b", "Bob"])

        try node.verifyContact(bob.id)
        #expect(try node.contact(bob.id).verified)
        let renamed = try node.renameContact(bob.id, to: "Bobby")
        #expect(renamed.name == "Bobby")
        #expect(throws: YaOKError(.invalidName)) { try node.renameContact(bob.id, to: "B") }
        #expect(try node.findContact("bobby").id == bob.id)
        #expect(try node.findContact(String(bob.fingerprint.hex.prefix(8)).lowercased()).id == bob.id)
        #expect(try node.findContact(bob.userID).id == bob.id)
        #expect(try node.findContact("\(bob.id)").id == bob.id)
        #expect(throws: YaOKError(.notFound)) { try node.findContact("Carol") }
        #expect(Self.message { try node.findContact("Carol") } == "No contact matches \"Carol\"")
        #expect(Self.message { try node.findContact("bboby") } == "No contact matches \"bboby\". Did you mean \"Bobby\"?")
        #expect(Self.message { try node.findContact("ALICE") }
                == "No contact matches \"ALICE\". Did you mean \"alice b\"?")  // a prefix
        #expect(throws: YaOKError(.notFound)) { try node.contact(999) }
        #expect(try node.securityEvents().contains { $0.kind == .contactVerified })
    }

    static func message(_ body: () throws -> Void) -> String? {
        do { try body() } catch let error as YaOKError { return error.message } catch { return "\(error)" }
        return nil
    }

    @Test func closeNamesForDidYouMean() {
        let names = ["Bob", "Bobby", "Alice", "Zoë", "Christopher"]
        #expect(Node.closeNames(to: "bbo", in: names) == ["Bob"])  // two letters swapped: one edit
        #expect(Node.closeNames(to: "Bo", in: names) == ["Bob", "Bobby"])  // prefixes first (distance 0)
        #expect(Node.closeNames(to: "alcie", in: names) == ["Alice"])
        #expect(Node.closeNames(to: "zoe", in: names) == ["Zoë"])
        #expect(Node.closeNames(to: "christoper", in: names) == ["Christopher"])
        #expect(Node.closeNames(to: "kristofer", in: names).isEmpty)  // 4 edits
        #expect(Node.closeNames(to: "Carol", in: names).isEmpty)
        #expect(Node.closeNames(to: "", in: names).isEmpty)
        #expect(Node.editDistance(Array("kitten"), Array("sitting"), atMost: 5) == 3)
        #expect(Node.editDistance(Array("ab"), Array("ba"), atMost: 2) == 1)
        #expect(Node.editDistance(Array("abcdefgh"), Array("z"), atMost: 2) == 3)
        #expect(Node.orList(["A", "B", "C"]) == "A, B or C")
    }

    @Test func previewFlagsNamesThatMixScripts() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let spoof = try node.previewContact(card: try cardText("\u{0410}lice"))  // Cyrillic А
        #expect(spoof.mixedScripts)
        #expect(spoof.json.serialized.contains("\"mixed_scripts\":true"))
        let plain = try node.previewContact(card: try cardText("Alice"))
        #expect(!plain.mixedScripts)
        #expect(plain.json.serialized.contains("\"mixed_scripts\":false"))
    }

    /// Each X25519 key and each Ed25519 key belongs to one contact at most (issue 8 §3): a
    /// card that shares either with a contact is refused, so no sender key is ambiguous.
    @Test func aKeyBelongsToOneContactAtMost() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let x1 = Sodium.randomBytes(32), x2 = Sodium.randomBytes(32), e1 = Sodium.randomBytes(32), e2 = Sodium.randomBytes(32)
        func card(_ name: String, _ x: [UInt8], _ e: [UInt8]) throws -> String {
            try Identity(name: name, secrets: try SecureBytes(copying: x + e)).card.text
        }
        let bob = try node.addContact(card: try card("Bob", x1, e1))
        for (x, e) in [(x1, e2), (x2, e1)] {
            let other = try card("Robert", x, e)
            #expect(try node.previewContact(card: other).existingContactID == bob.id)
            #expect(throws: YaOKError(.contactExists)) { try node.addContact(card: other) }
            #expect(errorMessage { _ = try node.addContact(card: other) }
                    == "This card shares a key with Bob, who is already in your contacts")
        }
        #expect(try node.contacts().count == 1)
        #expect(try node.addContact(card: try card("Carol", x2, e2)).name == "Carol")
    }

    /// Previewing one's own card says so, as adding it does (issue 8 §9); so does a card that
    /// shares a key with one's own identity.
    @Test func ownCardIsRefusedInPreviewToo() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let me = try node.identity()
        let secrets = try me.exportSecrets()
        let own = me.card.text
        #expect(errorMessage { _ = try node.previewContact(card: own) } == "This is your own contact card")
        #expect(throws: YaOKError(.invalidArgument)) { try node.previewContact(card: own) }
        #expect(throws: YaOKError(.invalidArgument)) { try node.addContact(card: own) }
        let sameX = secrets.withUnsafeBytes { Array($0.prefix(32)) } + Sodium.randomBytes(32)
        let twin = try Identity(name: "Twin", secrets: try SecureBytes(copying: sameX)).card.text
        #expect(errorMessage { _ = try node.previewContact(card: twin) } == "This is your own contact card")
        #expect(throws: YaOKError(.invalidArgument)) { try node.addContact(card: twin) }
        #expect(try node.contacts().isEmpty)
    }

    /// Text inputs are bounded (issue 8 §9): a query over 4096 bytes is refused before any
    /// matching (a 10 MB one took 1.7 s), and so is card text, even if trimming would save it.
    @Test func textInputsAreBounded() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        _ = try node.addContact(card: try cardText("Bob"))
        #expect(throws: YaOKError(.invalidArgument)) { try node.findContact(String(repeating: "a", count: Node.maxQueryBytes + 1)) }
        #expect(throws: YaOKError(.notFound)) { try node.findContact(String(repeating: "a", count: Node.maxQueryBytes)) }
        let card = try cardText("Carol")
        let padded = card + String(repeating: " ", count: ContactCard.maxTextBytes - card.utf8.count)
        #expect(try node.previewContact(card: padded).name == "Carol")
        #expect(throws: YaOKError(.invalidCard)) { try node.previewContact(card: padded + " ") }
        #expect(throws: YaOKError(.invalidCard)) { try ContactCard(text: padded + " ") }
    }

    /// A fingerprint prefix made only of decimal digits is still a fingerprint prefix
    /// (this once failed whenever Bob's fingerprint happened to start with 8 digits).
    @Test func numericFingerprintPrefixFindsTheContact() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        var card = try cardText("Bob")
        while !(try ContactCard(text: card).fingerprint.hex.prefix(6).allSatisfy(\.isNumber)) {
            card = try cardText("Bob")
        }
        let bob = try node.addContact(card: card)
        #expect(try node.findContact(String(bob.fingerprint.hex.prefix(6))).id == bob.id)
        #expect(try node.findContact("\(bob.id)").id == bob.id)
    }

    @Test func connectionStatus() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        let node = try makeNode(dir, clock: clock)
        let bob = try node.addContact(card: try cardText("Bob"))
        try node.setContactConnection(bob.id, transport: "Bluetooth")
        #expect(try node.contact(bob.id).connection == .online(transport: "Bluetooth"))
        clock.advance(seconds: 5)
        try node.setContactConnection(bob.id, transport: nil)
        #expect(try node.contact(bob.id).connection == .lastSeen(clock.now))
    }

    @Test func deleteKeepingMessagesLeavesNoOrphans() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bobIdentity = try Identity(name: "Bob")
        let bobCard = bobIdentity.card.text
        let bob = try node.addContact(card: bobCard)
        let carol = try node.addContact(card: try cardText("Carol"))
        _ = try node.send(to: bob.id, text: "one")
        try node.receive("two", from: bobIdentity, sentAt: Clock.milliseconds() - 60_000)

        try node.deleteContact(bob.id)
        #expect(try node.contacts().map(\.id) == [carol.id])
        #expect(try node.history(bob.id).messages.map(\.text) == ["two", "one"])
        #expect(errorMessage { _ = try node.send(to: bob.id, text: "x") }
                == "This contact was deleted and can no longer be messaged")
        // Deleting a contact without messages removes its conversation too.
        try node.deleteContact(carol.id)
        #expect(throws: YaOKError(.notFound)) { try node.history(carol.id) }
        try expectNoOrphans(node)

        // Adding the same person again brings the kept conversation back.
        let again = try node.addContact(card: bobCard)
        #expect(again.id == bob.id)
        #expect(try node.history(again.id).messages.count == 2)
    }

    @Test func deleteWithMessagesRemovesEverything() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        for i in 0..<20 { _ = try node.send(to: bob.id, text: "m\(i)") }
        try node.deleteContact(bob.id, deleteMessages: true)
        #expect(throws: YaOKError(.notFound)) { try node.history(bob.id) }
        try expectNoOrphans(node)
        let counts = try node.withStore { store, _ in
            try store.db.rows("SELECT (SELECT COUNT(*) FROM messages) + (SELECT COUNT(*) FROM conversations)") { $0.int(0) }
        }
        #expect(counts == [0])
    }

    private func expectNoOrphans(_ node: Node) throws {
        try node.withStore { store, _ in
            let orphans = try store.db.rows("""
                SELECT (SELECT COUNT(*) FROM messages WHERE conversation_id NOT IN (SELECT id FROM conversations))
                     + (SELECT COUNT(*) FROM contacts WHERE id NOT IN (SELECT id FROM conversations))
                     + (SELECT COUNT(*) FROM conversations v WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = v.id)
                                                            AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = v.id))
                """) { $0.int(0) }
            #expect(orphans == [0])
            var fk: [String] = []
            try store.db.query("PRAGMA foreign_key_check") { fk.append($0.text(0)) }
            #expect(fk.isEmpty)
        }
    }
}
