import Testing
@testable import QRCode

/// Known answers from published worked examples, so that the field, the generator and the
/// division are checked against numbers this code did not produce.
@Suite struct ReedSolomonTests {
    @Test func fieldTablesMatchThePolynomial() {
        // α^8 = x^4 + x^3 + x^2 + 1 = 0x1D under 0x11D; α^255 = 1; log 3 = 25.
        #expect(GaloisField.exp[8] == 0x1D)
        #expect(GaloisField.exp[255] == 1)
        #expect(GaloisField.log[3] == 25)
        #expect(GaloisField.multiply(0x53, 0xCA) == GaloisField.exp[(GaloisField.log[0x53] + GaloisField.log[0xCA]) % 255])
        #expect(GaloisField.multiply(0, 0x80) == 0)
    }

    /// ISO/IEC 18004 Annex A: g7(x) = x^7 + α^87 x^6 + α^229 x^5 + α^146 x^4 + α^149 x^3
    /// + α^238 x^2 + α^102 x + α^21.
    @Test func generatorOfDegreeSeven() {
        let exponents = [87, 229, 146, 149, 238, 102, 21]
        #expect(ReedSolomon.generator(degree: 7) == exponents.map { GaloisField.exp[$0] })
    }

    /// ISO/IEC 18004 Annex I: "01234567" as 1-M (numeric mode).
    @Test func isoAnnexExample() {
        let data: [UInt8] = [16, 32, 12, 86, 97, 128, 236, 17, 236, 17, 236, 17, 236, 17, 236, 17]
        let ecc: [UInt8] = [165, 36, 212, 193, 237, 54, 199, 135, 44, 85]
        #expect(ReedSolomon.remainder(data, generator: ReedSolomon.generator(degree: 10)) == ecc)
    }

    /// The widely reproduced "HELLO WORLD" 1-M example (alphanumeric mode).
    @Test func helloWorldExample() {
        let data: [UInt8] = [32, 91, 11, 120, 209, 114, 220, 77, 67, 64, 236, 17, 236, 17, 236, 17]
        let ecc: [UInt8] = [196, 35, 39, 119, 235, 215, 231, 226, 93, 23]
        #expect(ReedSolomon.remainder(data, generator: ReedSolomon.generator(degree: 10)) == ecc)
    }
}
