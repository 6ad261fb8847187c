import Testing
@testable import QRCode

@Suite struct RenderTests {
    @Test func terminalStringShape() throws {
        let code = try QRCode.encode("yaok:1:render")
        let text = code.terminalString()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        let side = code.size + 8
        #expect(lines.count == (side + 1) / 2)
        #expect(lines.allSatisfy { $0.count == side })
        #expect(text.allSatisfy { " ▀▄█\n".contains($0) })
        // The first line is all quiet zone: blank normally, solid ink when inverted.
        #expect(lines.first?.allSatisfy { $0 == " " } == true)
        let inverted = code.terminalString(invert: true)
        #expect(inverted.split(separator: "\n").first?.allSatisfy { $0 == "█" } == true)
    }

    /// Each half block must show exactly the two modules it covers.
    @Test func terminalStringModules() throws {
        let code = try QRCode.encode("yaok:1:halves", ecc: .high)
        for invert in [false, true] {
            let lines = code.terminalString(quietZone: 0, invert: invert).split(separator: "\n").map(Array.init)
            for y in stride(from: 0, to: code.size, by: 2) {
                for x in 0..<code.size {
                    let top = code[x, y] != invert
                    let bottom = y + 1 < code.size ? code[x, y + 1] != invert : invert
                    let expected: Character = top ? (bottom ? "█" : "▀") : (bottom ? "▄" : " ")
                    #expect(lines[y / 2][x] == expected)
                }
            }
        }
    }

    @Test func pbmAndPgmLayout() throws {
        let code = try QRCode.encode("pbm")
        let side = (code.size + 8) * 3
        let pbm = code.pbm(scale: 3)
        let pbmHeader = Array("P4\n\(side) \(side)\n".utf8)
        #expect(Array(pbm.prefix(pbmHeader.count)) == pbmHeader)
        #expect(pbm.count == pbmHeader.count + side * ((side + 7) / 8))
        // Pixel (12, 12) is module (0, 0) of the finder (dark): byte 1 of row 12, bit 4.
        let row12 = pbmHeader.count + 12 * ((side + 7) / 8)
        #expect(pbm[row12 + 1] & 0x08 != 0)
        #expect(pbm[row12] == 0)

        let pgm = code.pgm(quietZone: 2, scale: 2)
        let pgmSide = (code.size + 4) * 2
        let pgmHeader = Array("P5\n\(pgmSide) \(pgmSide)\n255\n".utf8)
        #expect(Array(pgm.prefix(pgmHeader.count)) == pgmHeader)
        #expect(pgm.count == pgmHeader.count + pgmSide * pgmSide)
        #expect(pgm[pgmHeader.count] == 255)
        #expect(pgm[pgmHeader.count + 4 * pgmSide + 4] == 0)
    }
}
