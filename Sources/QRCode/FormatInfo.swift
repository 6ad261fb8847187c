/// The BCH-protected words that tell a reader how to decode the rest: format information
/// (level and mask, 15 bits) and, from version 7 on, version information (18 bits).
enum FormatInfo {
    /// 5 data bits (level, mask) + 10 BCH(15,5) check bits (generator 0x537), XORed with
    /// 0x5412 so that the word is never all zeros (a reader could not tell it from blank).
    static func formatBits(level: ErrorCorrectionLevel, mask: Int) -> UInt32 {
        let data = level.formatBits << 3 | UInt32(mask)
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        return (data << 10 | remainder) ^ 0x5412
    }

    /// 6 version bits + 12 BCH(18,6) check bits (generator 0x1F25); not masked.
    static func versionBits(_ version: Int) -> UInt32 {
        var remainder = UInt32(version)
        for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
        return UInt32(version) << 12 | remainder
    }

    /// Reads a format word back (for tests and sanity checks): the (level, mask) whose
    /// codeword is nearest in Hamming distance, if within the 3 errors BCH(15,5) corrects.
    static func decodeFormat(_ word: UInt32) -> (level: ErrorCorrectionLevel, mask: Int)? {
        var best: (level: ErrorCorrectionLevel, mask: Int, distance: Int)?
        for level in ErrorCorrectionLevel.allCases {
            for mask in 0..<8 {
                let distance = (formatBits(level: level, mask: mask) ^ word).nonzeroBitCount
                if distance < (best?.distance ?? Int.max) { best = (level, mask, distance) }
            }
        }
        guard let found = best, found.distance <= 3 else { return nil }
        return (found.level, found.mask)
    }
}
