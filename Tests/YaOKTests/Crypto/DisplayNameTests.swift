import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// Display names cannot hide or reorder text (issue 8 §7), are stored and signed in NFC,
/// and names that mix scripts are flagged (docs/PROTOCOL.md §1).
@Suite struct DisplayNameTests {
    @Test(arguments: [
        "Bob\u{202E}evil",      // RIGHT-TO-LEFT OVERRIDE
        "Bo\u{200B}b",          // ZERO WIDTH SPACE
        "Bo\u{200C}b",          // ZERO WIDTH NON-JOINER
        "Bo\u{200D}b",          // ZERO WIDTH JOINER between letters
        "Bob\u{200E}",          // LEFT-TO-RIGHT MARK at the end (not white space: not trimmed)
        "\u{2066}Bob\u{2069}",  // isolates
        "Bo\u{00AD}b",          // SOFT HYPHEN
        "\u{FEFF}Bob",          // BYTE ORDER MARK
        "Bo\u{2060}b",          // WORD JOINER
        "Bob\u{E0041}\u{E0042}",  // tags outside a flag: ASCII smuggling
        "Bo\u{3164}b",          // HANGUL FILLER (a letter that renders as nothing)
        "Bo\u{115F}b",          // HANGUL CHOSEONG FILLER
        "Bo\u{034F}b",          // COMBINING GRAPHEME JOINER
        "Bob\u{FE0F}",          // a variation selector after a letter that is no emoji
        "Bob\u{E0100}",         // an ideographic variation selector after a Latin letter
        "Bo\u{180E}b",          // MONGOLIAN VOWEL SEPARATOR
        "Bob\u{2028}Smith",     // LINE SEPARATOR inside
        "Bob\u{2029}Smith",     // PARAGRAPH SEPARATOR inside
        "Bob\u{0085}Smith",     // NEXT LINE (a control)
        "Bob\tSmith",
        "\u{1F469}\u{200D} Ann",  // a ZWJ with nothing after it
        "\u{1F3F4}\u{E0067}\u{E0062} Scot",  // a flag tag sequence without its CANCEL TAG
    ])
    func hiddenCharactersAreRefused(raw: String) {
        #expect(throws: YaOKError(.invalidName)) { try DisplayName.validate(raw) }
        #expect(throws: YaOKError(.invalidName)) { try Identity(name: raw) }
    }

    @Test(arguments: [
        "👩‍💻 Ann",                      // emoji ZWJ sequence
        "👨🏽‍👩🏽‍👧🏽 family",
        "❤️ Bo",                          // VS16 after an emoji
        "1️⃣ One",                         // keycap: VS16 after a digit
        "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F} Scot",  // flag of Scotland
        "葛\u{E0100}城",                   // ideographic variation sequence
        "山田\u{3000}太郎",                 // ideographic space inside
        "Anne\u{00A0}Marie",
    ])
    func emojiAndIdeographSequencesStayValid(raw: String) throws {
        #expect(try DisplayName.validate(raw) == raw)
    }

    @Test func hiddenCharacterMessageNamesTheCodePoint() {
        #expect(errorMessage { _ = try DisplayName.validate("Bob\u{202E}evil") }?.contains("U+202E") == true)
    }

    @Test func namesAreNormalisedToNFC() throws {
        let decomposed = "Zoe\u{0308} A\u{030A}sa"
        let name = try DisplayName.validate(decomposed)
        #expect(Array(name.utf8) == Array("Zo\u{00EB} \u{00C5}sa".utf8))
        #expect(Array(try Identity(name: decomposed).name.utf8) == Array(name.utf8))
        // Singletons too: KELVIN SIGN and OHM SIGN become K and Ω.
        #expect(Array(try DisplayName.validate("\u{212A}elvin \u{2126}").utf8) == Array("Kelvin \u{03A9}".utf8))
        #expect(DisplayName.isNormalForm(name))
        #expect(!DisplayName.isNormalForm(decomposed))
        #expect(!DisplayName.isNormalForm(" Alice"))
        #expect(!DisplayName.isNormalForm("A"))
    }

    @Test func whiteSpaceIsTrimmedByUnicodeWhiteSpace() throws {
        #expect(try DisplayName.validate("\u{3000}\u{00A0}Alice\u{2003}\n") == "Alice")
        // Inside, space separators stay as typed.
        #expect(try DisplayName.validate("Alice  Smith") == "Alice  Smith")
    }

    @Test func graphemesAreCountedNearTheLimits() throws {
        let flag = "🇺🇦"  // two regional indicators, one character
        #expect(try DisplayName.validate(String(repeating: flag, count: 50)).count == 50)
        #expect(throws: YaOKError(.invalidName)) { try DisplayName.validate(String(repeating: flag, count: 51)) }
        #expect(try DisplayName.validate("e\u{301}e\u{301}").count == 2)
        #expect(throws: YaOKError(.invalidName)) { try DisplayName.validate("e\u{301}\u{302}\u{303}") }
    }

    @Test func longNamesAreBoundedInBytes() throws {
        // 50 characters, but each with 30 combining marks: 50 × 61 bytes, more than a card holds.
        let heavy = String(repeating: "e" + String(repeating: "\u{0301}", count: 30), count: 50)
        #expect(heavy.count == 50)
        #expect(throws: YaOKError(.invalidName)) { try DisplayName.validate(heavy) }
        // An input over 4096 bytes is refused before any work, even if trimming would save it.
        #expect(throws: YaOKError(.invalidName)) {
            try DisplayName.validate(String(repeating: " ", count: DisplayName.maxInputBytes) + "Al")
        }
        let fits = String(repeating: " ", count: DisplayName.maxInputBytes - 2) + "Al"
        #expect(try DisplayName.validate(fits) == "Al")
    }

    @Test(arguments: [
        ("\u{0410}lice", true),           // Cyrillic А + Latin
        ("Al\u{03B9}ce", true),           // Greek ι
        ("Pavel Павел", true),
        ("Alice", false), ("Алиса", false), ("Ἀλέξανδρος", false),
        ("山田 Taro", false), ("田中さん", false), ("カタカナ漢字ひらがな", false),
        ("김민준 Kim", false), ("王小明 ㄅ", false),
        ("Alice 😀", false), ("Ｊohn", false),   // fullwidth Latin is Latin
        ("\u{1D400}lice", false),         // mathematical bold A: no script of its own
        ("R2-D2", false), ("مريم Maryam", true), ("Иван 山", true),
    ])
    func mixedScriptsAreFlagged(name: String, mixed: Bool) {
        #expect(DisplayName.mixesScripts(name) == mixed)
    }

    @Test func aCardWhoseSignedNameIsNotInNormalFormIsInvalid() throws {
        let owner = try Identity(name: "Zoë")
        for name in ["Zoe\u{0308}", " Zoë", "Zoë ", "Zo\u{200B}ë", "Z"] {
            let payload = CardForge.payload(owner, name: name)
            #expect(throws: YaOKError(.invalidCard)) { try ContactCard(payload: payload) }
        }
        // The same bytes as the owner's own card decode.
        #expect(try ContactCard(payload: CardForge.payload(owner, name: "Zoë")).name == "Zoë")
    }

    @Test func previewFlagsMixedScripts() throws {
        let preview = ContactPreview(name: "\u{0410}lice", publicIdentity: try Identity(name: "Alice").publicIdentity,
                                     existingContactID: nil)
        #expect(preview.mixedScripts)
        #expect(!ContactPreview(name: "Alice", publicIdentity: preview.publicIdentity, existingContactID: nil).mixedScripts)
    }
}

/// Builds card payloads the way ContactCard does, but with any name, keys and key proof: for
/// tests of what a decoder must refuse.
enum CardForge {
    static func payload(_ signer: Identity, name: String, keys: PublicIdentity? = nil, keyProof: [UInt8]? = nil) -> [UInt8] {
        let keys = keys ?? signer.publicIdentity
        let nameBytes = Array(name.utf8)
        var signed: [UInt8] = [ContactCard.version] + keys.encryptionKey + keys.signingKey
        signed += [UInt8(nameBytes.count >> 8), UInt8(nameBytes.count & 0xff)] + nameBytes
        signed += keyProof ?? signer.keyProof
        return signed + signer.sign(ContactCard.signatureContext + signed)
    }
}
