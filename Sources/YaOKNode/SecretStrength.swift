import YaOKSupport

/// What a PIN or passphrase may be, and how strong it looks (issue 8 §1).
///
/// Accepted: 6 or more characters (as a person counts them), at most 256 bytes of UTF-8,
/// any printable characters: letters, digits, spaces, punctuation, emoji. Refused: control
/// characters (tab, newline, DEL …), line and paragraph separators, unassigned code points.
/// Digits only is a PIN, and keeps the seed's wording "PIN must be at least 6 digits" when
/// too short; anything else too short is "Passphrase must be at least 6 characters". Both
/// are `pinTooShort`; too long or unprintable is `invalidArgument`. The secret is hashed in
/// Unicode NFC, so the same text typed on another keyboard opens the vault.
public struct SecretStrength: Sendable, Equatable {
    /// A coarse class for a strength meter. Thresholds are in estimated bits (see
    /// `estimatedBits`): weak below 40, fair below 60, strong from 60. At the production
    /// Argon2id costs one guess costs about 0.11 core-seconds (yaok-bench kdf), so 40 bits
    /// is about 1,900 core-years of offline search on average and 60 bits about 2 billion;
    /// every 6- to 12-digit PIN is weak (docs/ABI.md, "Offline guessing").
    public enum Level: String, Sendable, Comparable, CaseIterable {
        case weak, fair, strong

        public static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }
        /// 1, 2, 3: YAOK_STRENGTH_WEAK, _FAIR, _STRONG.
        public var rank: UInt32 {
            switch self {
            case .weak: return 1
            case .fair: return 2
            case .strong: return 3
            }
        }
    }

    public let level: Level
    /// A rough, deliberately conservative estimate of the bits of guessing work, rounded
    /// down. It knows no dictionary: a run of letters counts at most as one word from a
    /// list of 4,096 (12 bits), a run of digits as random digits unless it repeats or
    /// counts up or down, a repeated symbol as 1 bit. Random characters score low; several
    /// random words score well. A guide for a meter, not a guarantee.
    public let estimatedBits: Int
    /// Digits only.
    public let isPIN: Bool

    public static let minimumCharacters = 6
    public static let maximumBytes = 256

    /// Refuses what setup would refuse, with the same errors (`pinTooShort`,
    /// `invalidArgument`); unlock refuses the same inputs before anything is counted.
    public static func validate(_ secret: String) throws {
        if secret.count < minimumCharacters {
            if secret.isEmpty || isDigits(secret) { throw YaOKError(.pinTooShort) }
            throw YaOKError(.pinTooShort, "Passphrase must be at least 6 characters")
        }
        guard secret.utf8.count <= maximumBytes else {
            throw YaOKError(.invalidArgument, "A PIN or passphrase is at most \(maximumBytes) bytes")
        }
        guard secret.unicodeScalars.allSatisfy(isPrintable) else {
            throw YaOKError(.invalidArgument, "A PIN or passphrase may hold only printable characters (no control characters or line breaks)")
        }
    }

    /// Validates, then estimates.
    public static func check(_ secret: String) throws -> SecretStrength {
        try validate(secret)
        return estimate(secret)
    }

    /// The estimate for any text (no validation).
    public static func estimate(_ secret: String) -> SecretStrength {
        let bits = max(0, Int(estimateBits(Array(secret)).rounded(.down)))
        let level: Level = bits < 40 ? .weak : bits < 60 ? .fair : .strong
        return SecretStrength(level: level, estimatedBits: bits, isPIN: !secret.isEmpty && isDigits(secret))
    }

    // MARK: - The estimator

    static func isDigits(_ s: String) -> Bool {
        s.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator, .unassigned, .surrogate: return false
        default: return true
        }
    }

    private static let log2of10 = 3.321928
    private static let log2of26 = 4.700440

    private static func estimateBits(_ chars: [Character]) -> Double {
        // A block repeated ("abcabc", "121212") is worth its block and one bit.
        if chars.count >= 2 {
            for length in 1...(chars.count / 2) where chars.count % length == 0 {
                let block = Array(chars[0..<length])
                if stride(from: length, to: chars.count, by: length).allSatisfy({ Array(chars[$0..<$0 + length]) == block }) {
                    return estimateBits(block) + 1
                }
            }
        }
        var bits = 0.0
        var seenOthers: Set<Character> = []
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c.isASCII, c.isNumber {
                var j = i
                while j < chars.count, chars[j].isASCII, chars[j].isNumber { j += 1 }
                bits += digitRunBits(chars[i..<j].compactMap { $0.wholeNumberValue })
                i = j
            } else if c.isLetter {
                var j = i
                var upper = false
                while j < chars.count, chars[j].isLetter {
                    if chars[j].isUppercase { upper = true }
                    j += 1
                }
                bits += min(Double(j - i) * log2of26, 12) + (upper ? 1 : 0)
                i = j
            } else {
                bits += seenOthers.contains(c) ? 1 : (c.isASCII ? 5 : 7)
                seenOthers.insert(c)
                i += 1
            }
        }
        return bits
    }

    /// Random digits are log2(10) bits each; one digit repeated, or a run counting up or
    /// down by one (wrapping 9→0), is one choice among 30: about 5 bits.
    private static func digitRunBits(_ digits: [Int]) -> Double {
        guard digits.count > 2 else { return Double(digits.count) * log2of10 }
        let steps = Set(zip(digits, digits.dropFirst()).map { ($1 - $0 + 10) % 10 })
        if steps.count == 1, let step = steps.first, step == 0 || step == 1 || step == 9 { return 5 }
        return Double(digits.count) * log2of10
    }
}
