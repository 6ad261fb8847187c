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

    @Test func grayPixelsAndPgmLayout() throws {
        let code = try QRCode.encode("pixels")
        let (side, pixels) = code.grayPixels(quietZone: 4, scale: 3)
        #expect(side == (code.size + 8) * 3)
        #expect(pixels.count == side * side)
        #expect(pixels.allSatisfy { $0 == 0 || $0 == 255 })
        // The quiet zone is white; pixel (12, 12) is module (0, 0), the finder's corner (dark).
        #expect(pixels[0] == 255 && pixels[11 * side + 11] == 255)
        #expect(pixels[12 * side + 12] == 0)
        for y in 0..<code.size {
            for x in 0..<code.size {
                #expect((pixels[(12 + 3 * y + 1) * side + 12 + 3 * x + 2] == 0) == code[x, y])
            }
        }

        let pgm = code.pgm(quietZone: 2, scale: 2)
        let pgmSide = (code.size + 4) * 2
        let pgmHeader = Array("P5\n\(pgmSide) \(pgmSide)\n255\n".utf8)
        #expect(Array(pgm.prefix(pgmHeader.count)) == pgmHeader)
        #expect(pgm.count == pgmHeader.count + pgmSide * pgmSide)
        #expect(pgm[pgmHeader.count] == 255)
        #expect(pgm[pgmHeader.count + 4 * pgmSide + 4] == 0)
    }

    /// libqrencode's symbols have the fixed patterns in place: the three finders.
    @Test func finderPatterns() throws {
        let code = try QRCode.encode("yaok:1:finders", ecc: .quartile)
        for (ox, oy) in [(0, 0), (code.size - 7, 0), (0, code.size - 7)] {
            for y in 0..<7 {
                for x in 0..<7 {
                    let ring = max(abs(x - 3), abs(y - 3))
                    #expect(code[ox + x, oy + y] == (ring != 2), "finder at (\(ox), \(oy)), module (\(x), \(y))")
                }
            }
        }
        #expect(!code[-1, 0] && !code[code.size, 0])
    }
}
