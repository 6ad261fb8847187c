/// A QR code version (1...40): the symbol is 17 + 4·version modules on a side. This file
/// holds what depends on the version alone, and the ISO/IEC 18004 block tables.
struct Version: Comparable, Sendable {
    static let range = 1...40
    let number: Int

    init?(_ number: Int) {
        guard Self.range.contains(number) else { return nil }
        self.number = number
    }

    static func < (a: Version, b: Version) -> Bool { a.number < b.number }

    var size: Int { 17 + 4 * number }

    /// Byte mode's character count is 8 bits wide up to version 9 and 16 bits from 10 on.
    var byteModeCountBits: Int { number <= 9 ? 8 : 16 }

    /// Centre coordinates (the same list for rows and columns) of the alignment patterns.
    /// ISO tabulates them; they follow a rule: the first is 6, the last is size − 7, and the
    /// ones between are evenly spaced by an even step, with the odd gap going to the first
    /// interval. Version 32 is the one exception to the rounding.
    var alignmentPositions: [Int] {
        if number == 1 { return [] }
        let count = number / 7 + 2
        let step = number == 32 ? 26 : (number * 4 + count * 2 + 1) / (count * 2 - 2) * 2
        var positions = [6]
        var position = size - 7
        var tail: [Int] = []
        for _ in 0..<(count - 1) {
            tail.insert(position, at: 0)
            position -= step
        }
        positions += tail
        return positions
    }

    /// Modules left for codewords once the function patterns and format/version
    /// information are placed (it can exceed 8 × codewords: the rest are remainder bits).
    var rawDataModules: Int {
        var result = (16 * number + 128) * number + 64
        if number >= 2 {
            let align = number / 7 + 2
            // Alignment patterns, less the overlaps with the timing patterns.
            result -= (25 * align - 10) * align - 55
            // Two 6×3 version information areas.
            if number >= 7 { result -= 36 }
        }
        return result
    }

    /// All codewords (data + ECC) in the symbol.
    var totalCodewords: Int { rawDataModules / 8 }

    func eccCodewordsPerBlock(_ level: ErrorCorrectionLevel) -> Int {
        Self.eccPerBlock[level.rawValue][number]
    }

    func blockCount(_ level: ErrorCorrectionLevel) -> Int {
        Self.blocks[level.rawValue][number]
    }

    func dataCodewords(_ level: ErrorCorrectionLevel) -> Int {
        totalCodewords - eccCodewordsPerBlock(level) * blockCount(level)
    }

    /// The most payload bytes byte mode fits at this version and level.
    func byteCapacity(_ level: ErrorCorrectionLevel) -> Int {
        (dataCodewords(level) * 8 - 4 - byteModeCountBits) / 8
    }

    // ISO/IEC 18004 Table 9, by level (L, M, Q, H) then version (index 0 unused).
    // Every block of one symbol has the same number of ECC codewords, so the table needs
    // only that number and the block count; how data codewords split over the blocks
    // follows from the total (see Encoder.addErrorCorrection).
    private static let eccPerBlock: [[Int]] = [
        [-1, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28,
         28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
        [-1, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26,
         26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28],
        [-1, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30,
         28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
        [-1, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28,
         30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
    ]

    private static let blocks: [[Int]] = [
        [-1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8,
         8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
        [-1, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16,
         17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],
        [-1, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20,
         23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68],
        [-1, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25,
         25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81],
    ]
}
