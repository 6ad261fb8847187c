import YaOKSupport
import YaOKWire

/// Display-name rules (US-001 AC-001-03, docs/PROTOCOL.md §1): 2 to 50 characters as a
/// person counts them, so an emoji or an accented letter made of several code points counts
/// as one; nothing invisible that could hide or reorder text.
///
/// The Unicode data is the Swift standard library's (Unicode 17.0 in Swift 6.3): its
/// normalisation, grapheme clusters (UAX #29) and character properties.
public enum DisplayName {
    public static let minLength = 2
    public static let maxLength = 50
    /// The most UTF-8 bytes a valid name may take: what a contact card can carry (§2).
    public static let maxBytes = 1024
    /// Input longer than this is refused at once, before any Unicode processing.
    public static let maxInputBytes = 4096

    /// The name in normal form, or `invalidName`:
    /// 1. NFC (canonical composition), so that equal-looking canonical equivalents are the
    ///    same bytes;
    /// 2. White space (Unicode White_Space) removed at both ends;
    /// 3. 2 to 50 extended grapheme clusters, at most `maxBytes` UTF-8 bytes;
    /// 4. no hidden character anywhere (see `hiddenCharacter`).
    public static func validate(_ raw: String) throws -> String {
        guard raw.utf8.count <= maxInputBytes else { throw YaOKError(.invalidName) }
        let name = normalized(raw).trimmingWhitespace()
        guard name.utf8.count <= maxBytes, (minLength...maxLength).contains(name.count) else {
            throw YaOKError(.invalidName)
        }
        if let hidden = hiddenCharacter(in: name) {
            let hex = String(hidden.value, radix: 16, uppercase: true)
            let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            throw YaOKError(.invalidName, "Names cannot contain invisible, format or control characters (\(code))")
        }
        return name
    }

    /// Whether `name` is exactly — byte for byte — what `validate` makes of it: the form a
    /// contact card must carry. (Swift's `==` compares canonically, so it cannot tell NFC
    /// from NFD; this compares the UTF-8 bytes.)
    public static func isNormalForm(_ name: String) -> Bool {
        guard let valid = try? validate(name) else { return false }
        return valid.utf8.elementsEqual(name.utf8)
    }

    /// Unicode Normalization Form C of `text`.
    static func normalized(_ text: String) -> String {
        String(decoding: Array(text._nfcCodeUnits), as: UTF8.self)
    }

    /// The first character that can hide, reorder or disguise text, if any:
    /// - controls (Cc), format characters (Cf: bidirectional overrides and marks, zero-width
    ///   space and joiners, soft hyphen, tags …), line and paragraph separators (Zl, Zp);
    /// - every other Default_Ignorable_Code_Point (rendered as nothing: Hangul fillers,
    ///   the combining grapheme joiner, variation selectors …),
    /// except where emoji and ideographs need them, inside one grapheme cluster:
    /// - U+200D ZERO WIDTH JOINER between two emoji (an emoji ZWJ sequence, 👩‍💻),
    /// - U+FE0E and U+FE0F right after an emoji (text or emoji presentation: ❤️, 1️⃣),
    /// - U+E0100…U+E01EF right after a CJK unified ideograph (an ideographic variation
    ///   sequence),
    /// - tags U+E0020…U+E007E closed by U+E007F after U+1F3F4 (a flag such as 🏴󠁧󠁢󠁳󠁣󠁴󠁿).
    static func hiddenCharacter(in name: String) -> Unicode.Scalar? {
        for character in name {
            let scalars = Array(character.unicodeScalars)
            for (i, scalar) in scalars.enumerated() where isHidden(scalar) {
                if !isAllowed(at: i, in: scalars) { return scalar }
            }
        }
        return nil
    }

    private static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return scalar.properties.isDefaultIgnorableCodePoint
        }
    }

    /// The emoji and ideograph exceptions above; `scalars` is one grapheme cluster.
    private static func isAllowed(at i: Int, in scalars: [Unicode.Scalar]) -> Bool {
        let value = scalars[i].value
        let previous = i > 0 ? scalars[i - 1] : nil
        func isEmoji(_ s: Unicode.Scalar?) -> Bool {
            guard let s else { return false }
            return s.properties.isEmoji && s.value > 0x7F  // not the digits, # and * (Emoji=Yes too)
        }
        switch value {
        case 0x200D:
            return isEmoji(scalars.first) && i + 1 < scalars.count && isEmoji(scalars[i + 1])
        case 0xFE0E, 0xFE0F:
            // Keycaps (1️⃣) put VS16 after an ASCII digit, so any Emoji=Yes base counts here.
            return previous?.properties.isEmoji == true
        case 0xE0100...0xE01EF:
            return previous?.properties.isUnifiedIdeograph == true
        case 0xE0020...0xE007F:
            return isTagSequence(scalars)
        default:
            return false
        }
    }

    /// U+1F3F4, then one or more tags U+E0020…U+E007E, then CANCEL TAG U+E007F.
    private static func isTagSequence(_ scalars: [Unicode.Scalar]) -> Bool {
        guard scalars.count >= 3, scalars.first?.value == 0x1F3F4, scalars.last?.value == 0xE007F else { return false }
        return scalars.dropFirst().dropLast().allSatisfy { (0xE0020...0xE007E).contains($0.value) }
    }

    // MARK: - Mixed scripts

    /// Whether the letters of `name` come from more than one script, as in "Аlice" with a
    /// Cyrillic А: a hint for an app to warn before a name is trusted (it is no error, and
    /// says nothing about who holds the keys: the fingerprint does).
    ///
    /// A letter (Lu, Ll, Lt, Lo; not modifier letters) belongs to the script that begins its
    /// Unicode name ("LATIN SMALL LETTER A", "CYRILLIC CAPITAL LETTER A"; FULLWIDTH and
    /// HALFWIDTH skipped; "CJK …" is Han). Symbol-like letters of no particular script are
    /// left out: U+00AA, U+00B5, U+00BA, Letterlike Symbols U+2100…U+214F, Number Forms
    /// U+2150…U+218F, CJK Symbols and Punctuation U+3000…U+303F and Mathematical
    /// Alphanumeric Symbols U+1D400…U+1D7FF. The combinations that writing systems use
    /// together are not mixed (UTS #39's "highly restrictive" level): Latin with Han,
    /// Hiragana and Katakana (Japanese), with Han and Bopomofo (Chinese), or with Han and
    /// Hangul (Korean).
    public static func mixesScripts(_ name: String) -> Bool {
        var scripts = Set<Substring>()
        for scalar in name.unicodeScalars {
            if let script = script(of: scalar) { scripts.insert(script) }
        }
        guard scripts.count > 1 else { return false }
        return !allowedCombinations.contains { scripts.isSubset(of: $0) }
    }

    private static let allowedCombinations: [Set<Substring>] = [
        ["LATIN", "HAN", "HIRAGANA", "KATAKANA"],
        ["LATIN", "HAN", "BOPOMOFO"],
        ["LATIN", "HAN", "HANGUL"],
    ]

    /// The script of a letter as described at `mixesScripts`, nil for anything else.
    static func script(of scalar: Unicode.Scalar) -> Substring? {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .otherLetter: break
        default: return nil
        }
        switch scalar.value {
        case 0xAA, 0xB5, 0xBA, 0x2100...0x218F, 0x3000...0x303F, 0x1D400...0x1D7FF: return nil
        default: break
        }
        guard let name = scalar.properties.name else { return nil }
        var words = name.split(separator: " ")
        if let first = words.first, first == "FULLWIDTH" || first == "HALFWIDTH" { words.removeFirst() }
        guard let first = words.first else { return nil }
        switch first {
        case "CJK", "IDEOGRAPHIC", "CHINESE": return "HAN"
        case "HENTAIGANA": return "HIRAGANA"
        default: return first
        }
    }
}

extension String {
    /// Without Unicode White_Space at either end.
    package func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
