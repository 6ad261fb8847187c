import Testing
@testable import YaOKSupport
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The SQLite encoding of a message's status and direction (`messages.status`,
/// `messages.direction`), which the stores on disk fix for good: the core's raw values are
/// this encoding and nothing else (the C numbers, YAOK_MESSAGE_*, live in the FFI layer and
/// are pinned by YaOKFFITests' MessageCodesTests). A renumbering here would misread every
/// existing store, so the numbers are written out, and read back from a real file.
@Suite struct MessageCodesStoredTests {
    @Test func theEncodingIsPinned() {
        #expect(MessageStatus.allCases.map { "\($0.name)=\($0.rawValue)" }
                == ["pending=0", "sending=1", "sent=2", "delivered=3", "failed=4"])
        #expect(MessageDirection.outgoing.rawValue == 0 && MessageDirection.incoming.rawValue == 1)
    }

    @Test func aStoreHoldsTheseNumbers() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bobIdentity = try Identity(name: "Bob")
        let bob = try node.addContact(card: bobIdentity.card.text)
        _ = try node.send(to: bob.id, text: "out")
        try node.receive("in", from: bobIdentity, sentAt: Clock.milliseconds())
        node.close()

        let store = try Store(directory: dir.path)
        defer { store.close() }
        let rows = try store.db.rows("SELECT direction, status, sent_ms IS NULL FROM messages ORDER BY id") {
            [$0.int(0), $0.int(1), $0.int(2)]
        }
        #expect(rows == [[0, 0, 1], [1, 3, 1]])  // outgoing pending, incoming delivered
    }
}
