import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Nothing secret in clear on disk: after writing marker names and bodies, no file in the
/// data directory (database, -wal, -shm, anything else) contains a marker, a public or
/// secret key, or the PIN, raw or as hex or base64.
@Suite struct PlaintextScanTests {
    @Test func noMarkerOrKeyInAnyFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let pin = "918273"
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        let me = try node.setup(name: "Zyxmarkerself", pin: pin, confirmation: pin).identity
        let bobIdentity = try Identity(name: "Qwmarkerbob")
        let bob = try node.addContact(card: bobIdentity.card.text)
        try node.renameContact(bob.id, to: "Qwmarkerrenamed")
        let bodies = (0..<50).map { "Vkmarkerbody\($0) the launch code is 0451" }
        for body in bodies { _ = try node.send(to: bob.id, text: body) }
        try node.receive("Vkmarkerincoming", from: bobIdentity)
        #expect(try node.history(bob.id).messages.contains { $0.text == "Vkmarkerincoming" })
        try node.registerPlatformKey([UInt8](repeating: 0x5a, count: 32))

        var secrets: [[UInt8]] = ["Zyxmarkerself", "Qwmarkerbob", "Qwmarkerrenamed", "Vkmarkerbody", "Vkmarkerincoming",
                                  "launch code", pin].map { Array($0.utf8) }
        secrets += [bobIdentity.publicIdentity.encryptionKey, bobIdentity.publicIdentity.signingKey,
                    me.publicIdentity.encryptionKey, me.publicIdentity.signingKey]
        let mySecrets = try me.exportSecrets().copyBytes()
        secrets += [Array(mySecrets[0..<32]), Array(mySecrets[32..<64])]
        let dbKey = node.state.withLock { $0.keys?.contents.databaseKey.copyBytes() } ?? []
        #expect(dbKey.count == 32)
        secrets.append(dbKey)

        // Scan while open (the WAL and shm hold recent pages) and again after closing.
        try scan(dir.path, for: secrets)
        node.close()
        try scan(dir.path, for: secrets)
    }

    @Test func temporaryFilesStayInMemory() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try Store(directory: dir.path)
        defer { store.close() }
        #expect(try store.db.rows("PRAGMA temp_store") { $0.int(0) } == [2])
        #expect(try store.db.rows("PRAGMA secure_delete") { $0.int(0) } == [1])
    }

    private func scan(_ path: String, for secrets: [[UInt8]]) throws {
        let files = try FileManager.default.subpathsOfDirectory(atPath: path)
        #expect(files.contains(Store.fileName))
        var controlFound = false
        for file in files {
            let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + "/" + file)))
            let lower = data.lowercasedASCII
            // Control: the scan does find text that is in clear (the schema's table names).
            if lower.contains(Array("security_events".utf8)) { controlFound = true }
            for secret in secrets {
                for needle in encodings(of: secret) {
                    let haystack = needle.isASCIIText ? lower : data
                    let found = haystack.contains(needle.isASCIIText ? needle.lowercasedASCII : needle)
                    #expect(!found,
                            "\(file) contains \(String(decoding: needle, as: UTF8.self))")
                }
            }
        }
        #expect(controlFound, "the scan found no schema text: it is not reading the files")
    }

    /// Raw, hex (both cases: the scan lowercases text), base64 and base64url. Base64 has
    /// three alignments; trimming the edge characters matches all of them.
    private func encodings(of secret: [UInt8]) -> [[UInt8]] {
        var out = [secret, Array(Hex.encode(secret).utf8)]
        for shift in 0..<3 where secret.count > shift + 6 {
            let b64 = Data(secret.dropFirst(shift)).base64EncodedString()
            let core = String(b64.dropFirst(1).dropLast(4))
            out.append(Array(core.utf8))
            out.append(Array(core.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").utf8))
        }
        return out
    }
}

private extension Array where Element == UInt8 {
    var isASCIIText: Bool { allSatisfy { $0 >= 0x20 && $0 < 0x7f } }
    var lowercasedASCII: [UInt8] { map { ($0 >= 65 && $0 <= 90) ? $0 + 32 : $0 } }

    func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        let first = needle[0]
        var i = 0
        while i <= count - needle.count {
            if self[i] == first && Array(self[i..<i + needle.count]) == needle { return true }
            i += 1
        }
        return false
    }
}
