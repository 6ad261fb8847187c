import Testing
@testable import QRCode

/// Reads the function patterns and format/version information back out of encoded symbols.
@Suite struct StructureTests {
    /// A finder pattern's 7×7 picture, row by row, and its light separator.
    private func expectFinder(_ code: QRCode, left: Int, top: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        for dy in -1...7 {
            for dx in -1...7 {
                let x = left + dx, y = top + dy
                guard (0..<code.size).contains(x), (0..<code.size).contains(y) else { continue }
                let ring = max(abs(dx - 3), abs(dy - 3))
                #expect(code[x, y] == (ring != 2 && ring != 4), "finder module (\(x), \(y))", sourceLocation: sourceLocation)
            }
        }
    }

    /// Format bits as a reader collects them from each of the two copies.
    private func formatWords(_ code: QRCode) -> (UInt32, UInt32) {
        let n = code.size
        var first: UInt32 = 0, second: UInt32 = 0
        // Bit 14 first. Copy 1: row 8 from column 0 rightwards (skipping 6), then column 8
        // from row 7 upwards (skipping 6). Copy 2: column 8 upwards from the bottom, then row 8
        // from column n−8 rightwards.
        let copy1: [(Int, Int)] = [(0, 8), (1, 8), (2, 8), (3, 8), (4, 8), (5, 8), (7, 8), (8, 8),
                                   (8, 7), (8, 5), (8, 4), (8, 3), (8, 2), (8, 1), (8, 0)]
        let copy2: [(Int, Int)] = (0..<7).map { (8, n - 1 - $0) } + (0..<8).map { (n - 8 + $0, 8) }
        for (x, y) in copy1 { first = first << 1 | (code[x, y] ? 1 : 0) }
        for (x, y) in copy2 { second = second << 1 | (code[x, y] ? 1 : 0) }
        return (first, second)
    }

    @Test(arguments: [1, 2, 6, 7, 14, 27, 40])
    func functionPatterns(version: Int) throws {
        // Pick a payload length that lands on exactly this version at level L.
        let capacity = try #require(Version(version)).byteCapacity(.low)
        let code = try QRCode.encode([UInt8](repeating: 0x61, count: capacity), ecc: .low)
        #expect(code.version == version)
        #expect(code.size == 17 + 4 * version)
        let n = code.size
        expectFinder(code, left: 0, top: 0)
        expectFinder(code, left: n - 7, top: 0)
        expectFinder(code, left: 0, top: n - 7)
        for i in 8..<(n - 8) {
            #expect(code[i, 6] == (i % 2 == 0), "horizontal timing \(i)")
            #expect(code[6, i] == (i % 2 == 0), "vertical timing \(i)")
        }
        #expect(code[8, n - 8], "the always-dark module")
        // Alignment patterns: dark centre, light ring, dark ring.
        let positions = try #require(Version(version)).alignmentPositions
        for cx in positions {
            for cy in positions where !(cx == 6 && cy == 6) && !(cx == 6 && cy == positions.last) && !(cy == 6 && cx == positions.last) {
                #expect(code[cx, cy] && !code[cx + 1, cy] && code[cx + 2, cy] && !code[cx, cy - 1] && code[cx - 2, cy - 2])
            }
        }
        if version >= 7 {
            // Version block: bits 0–17 at (n−11 + i%3, i/3) and transposed.
            var bottomLeft: UInt32 = 0, topRight: UInt32 = 0
            for i in (0..<18).reversed() {
                topRight = topRight << 1 | (code[n - 11 + i % 3, i / 3] ? 1 : 0)
                bottomLeft = bottomLeft << 1 | (code[i / 3, n - 11 + i % 3] ? 1 : 0)
            }
            #expect(topRight == FormatInfo.versionBits(version))
            #expect(bottomLeft == FormatInfo.versionBits(version))
        }
    }

    @Test func formatInformationDecodesBackForEveryLevelAndMask() throws {
        for level in ErrorCorrectionLevel.allCases {
            for mask in 0..<8 {
                let code = try QRCode.encode("yaok:1:format", ecc: level, mask: mask)
                #expect(code.mask == mask && code.errorCorrectionLevel == level)
                let (first, second) = formatWords(code)
                #expect(first == second)
                let decoded = try #require(FormatInfo.decodeFormat(first))
                #expect(decoded.level == level && decoded.mask == mask)
            }
        }
    }

    @Test func outsideReadsLight() throws {
        let code = try QRCode.encode("x")
        #expect(!code[-1, 0] && !code[0, -1] && !code[code.size, 0] && !code[0, code.size])
    }
}
