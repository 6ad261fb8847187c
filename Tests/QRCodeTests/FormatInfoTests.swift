import Testing
@testable import QRCode

@Suite struct FormatInfoTests {
    /// ISO/IEC 18004 Table C.1 (after the 0x5412 mask).
    @Test func knownFormatWords() {
        #expect(FormatInfo.formatBits(level: .low, mask: 0) == 0b111011111000100)
        #expect(FormatInfo.formatBits(level: .medium, mask: 0) == 0b101010000010010)
        #expect(FormatInfo.formatBits(level: .quartile, mask: 0) == 0b011010101011111)
        #expect(FormatInfo.formatBits(level: .high, mask: 0) == 0b001011010001001)
        #expect(FormatInfo.formatBits(level: .medium, mask: 5) == 0b100000011001110)
    }

    /// ISO/IEC 18004 Table D.1.
    @Test func knownVersionWords() {
        #expect(FormatInfo.versionBits(7) == 0x07C94)
        #expect(FormatInfo.versionBits(8) == 0x085BC)
        #expect(FormatInfo.versionBits(40) == 0x28C69)
    }

    @Test func formatWordsDecodeBackAndCorrectThreeErrors() {
        for level in ErrorCorrectionLevel.allCases {
            for mask in 0..<8 {
                let word = FormatInfo.formatBits(level: level, mask: mask)
                #expect(FormatInfo.decodeFormat(word).map { [$0.level.rawValue, $0.mask] } == [level.rawValue, mask])
                let damaged = word ^ 0b100000010000001
                #expect(FormatInfo.decodeFormat(damaged).map { [$0.level.rawValue, $0.mask] } == [level.rawValue, mask])
            }
        }
    }
}
