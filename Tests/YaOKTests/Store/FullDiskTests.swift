import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A full disk is a clear error that loses nothing: SQLite's max_page_count makes the
/// database "full" exactly as ENOSPC would (SQLITE_FULL), without filling a real disk.
@Suite struct FullDiskTests {
    @Test func writesFailWithDiskFullAndNothingIsLost() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: try cardText("Bob"))
        _ = try node.send(to: bob.id, text: "kept")

        // Cap the database at its current size.
        try node.withStore { store, _ in
            var pages = 0
            try store.db.query("PRAGMA page_count") { pages = $0.int(0) }
            try store.db.execute("PRAGMA max_page_count = \(pages)")
        }
        var failure: YaOKError?
        for i in 0..<500 {
            do {
                _ = try node.send(to: bob.id, text: String(repeating: "x", count: 4000) + "\(i)")
            } catch let error as YaOKError {
                failure = error
                break
            }
        }
        let error = try #require(failure)
        #expect(error.code == .diskFull)
        #expect(error.message.hasPrefix("Not enough storage space"))

        // Everything committed before is still there, and the store is sound.
        let texts = try node.history(bob.id).messages.map(\.text)
        #expect(texts.first == "kept")
        try node.withStore { store, _ in
            var integrity: [String] = []
            try store.db.query("PRAGMA integrity_check") { integrity.append($0.text(0)) }
            #expect(integrity == ["ok"])
        }
    }
}
