import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct IdentityTests {
    @Test func freshIdentitiesDiffer() throws {
        let a = try Identity(name: "Alice")
        let b = try Identity(name: "Alice")
        #expect(a.publicIdentity != b.publicIdentity)
        #expect(a.publicIdentity.userID.count == 32)
        #expect(a.publicIdentity.userID != b.publicIdentity.userID)
    }

    @Test func fingerprintFormats() throws {
        let fp = try Identity(name: "Alice").publicIdentity.fingerprint
        #expect(fp.hex.count == 64)
        #expect(fp.hex == fp.hex.uppercased())
        let groups = fp.grouped.split(separator: " ")
        #expect(groups.count == 16)
        #expect(groups.allSatisfy { $0.count == 4 })
        #expect(groups.joined() == fp.hex)
        #expect(fp.short == String(fp.hex.prefix(6)))
    }

    @Test func exportAndRestoreGiveTheSameKeys() throws {
        let a = try Identity(name: "Alice")
        let b = try Identity(name: "Alice", secrets: try a.exportSecrets())
        #expect(a.publicIdentity == b.publicIdentity)
    }

    @Test(arguments: [
        ("Al", "Al"), ("  Alice  ", "Alice"), ("🔒🔐", "🔒🔐"), ("Zoë", "Zoë"),
        ("👩‍👩‍👧‍👦x", "👩‍👩‍👧‍👦x"), (String(repeating: "a", count: 50), String(repeating: "a", count: 50)),
        (String(repeating: "😀", count: 50), String(repeating: "😀", count: 50)),
    ])
    func validNames(raw: String, expected: String) throws {
        #expect(try DisplayName.validate(raw) == expected)
    }

    @Test(arguments: ["", "A", "   ", " A ", "😀", String(repeating: "a", count: 51),
                      String(repeating: "😀", count: 51), "Bad\u{0007}name", "two\nlines"])
    func invalidNames(raw: String) {
        #expect(throws: YaOKError(.invalidName)) { try DisplayName.validate(raw) }
        #expect(throws: YaOKError(.invalidName)) { try Identity(name: raw) }
    }

    @Test func invalidNameMessageIsTheSpecOne() {
        #expect(YaOKError(.invalidName).message == "Name must be 2-50 characters")
    }

    @Test func wrongSecretLengthIsRefused() throws {
        #expect(throws: YaOKError.self) { try Identity(name: "Alice", secrets: try SecureBytes(count: 32)) }
    }
}
