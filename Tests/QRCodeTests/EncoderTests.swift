import Testing
@testable import QRCode

@Suite struct EncoderTests {
    @Test func picksTheSmallestVersionThatFits() throws {
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 14)).version == 1)
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 15)).version == 2)
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 17), ecc: .low).version == 1)
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 7), ecc: .high).version == 1)
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 8), ecc: .high).version == 2)
        // The count field grows to 16 bits at version 10, which costs a byte of capacity.
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 213)).version == 10)
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 214)).version == 11)
        #expect(try QRCode.encode([UInt8](), ecc: .medium).version == 1)
    }

    @Test func tooLongIsAnError() throws {
        #expect(try QRCode.encode([UInt8](repeating: 0, count: 2331)).version == 40)
        #expect(throws: QRCode.EncodingError.dataTooLong(bytes: 2332, capacity: 2331)) {
            try QRCode.encode([UInt8](repeating: 0, count: 2332))
        }
        #expect(throws: QRCode.EncodingError.dataTooLong(bytes: 1274, capacity: 1273)) {
            try QRCode.encode([UInt8](repeating: 0, count: 1274), ecc: .high)
        }
    }

    @Test func invalidMaskIsAnError() {
        #expect(throws: QRCode.EncodingError.invalidMask(8)) { try QRCode.encode("a", mask: 8) }
        #expect(throws: QRCode.EncodingError.invalidMask(-1)) { try QRCode.encode("a", mask: -1) }
    }

    /// Byte mode bit stream for "Hi" at 1-M: 0100 | 00000010 | 01001000 01101001 | 0000
    /// terminator, then pad codewords 0xEC 0x11 alternating up to 16 codewords.
    @Test func dataCodewordLayout() throws {
        let v1 = try #require(Version(1))
        let data = QRCode.dataCodewords(Array("Hi".utf8), version: v1, level: .medium)
        #expect(data == [0x40, 0x24, 0x86, 0x90, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11])
    }

    /// Version 5-Q has two blocks of 15 data codewords and two of 16 (ISO Table 9);
    /// interleaving takes one from each block in turn, the long blocks' last ones at the end.
    @Test func interleavingOfUnequalBlocks() throws {
        let v5 = try #require(Version(5))
        let data = (0..<62).map { UInt8($0) }
        let all = QRCode.addErrorCorrection(data, version: v5, level: .quartile)
        #expect(all.count == 134)
        #expect(Array(all[0..<8]) == [0, 15, 30, 46, 1, 16, 31, 47])
        #expect(Array(all[56..<62]) == [14, 29, 44, 60, 45, 61])
        let firstBlockECC = ReedSolomon.remainder(Array(data[0..<15]), generator: ReedSolomon.generator(degree: 18))
        #expect(all[62] == firstBlockECC[0] && all[66] == firstBlockECC[1])
    }

    @Test func automaticMaskHasTheLowestPenalty() throws {
        let payload = Array("yaok:1:mask-choice".utf8)
        let chosen = try QRCode.encode(payload)
        let v = try #require(Version(chosen.version))
        func penalty(_ mask: Int) -> Int {
            var m = Matrix(version: v)
            m.placeCodewords(QRCode.addErrorCorrection(QRCode.dataCodewords(payload, version: v, level: .medium), version: v, level: .medium))
            m.applyMask(mask)
            m.drawFormat(level: .medium, mask: mask)
            return Mask.penalty(m)
        }
        let scores = (0..<8).map(penalty)
        #expect(scores[chosen.mask] == scores.min())
    }

    /// Penalty rules on hand-made lines.
    @Test func penaltyRules() {
        #expect(Mask.runPenalty([true, true, true, true]) == 0)
        #expect(Mask.runPenalty([true, true, true, true, true]) == 3)
        #expect(Mask.runPenalty([false, false, false, false, false, false, false, true]) == 5)
        let finder: [Bool] = [true, false, true, true, true, false, true]
        #expect(Mask.finderLikePenalty(finder + [false, false, false, false]) == 40)
        #expect(Mask.finderLikePenalty([true, true, true, true] + finder + [true, true, true, true]) == 0)
        // At the edge, the quiet zone beyond the symbol counts as light.
        #expect(Mask.finderLikePenalty(finder) == 40)
    }
}
