/// Reed–Solomon error correction codewords as QR codes use them: the remainder of
/// data(x)·x^n divided by the generator g(x) = (x − α^0)(x − α^1)…(x − α^(n−1)).
enum ReedSolomon {
    /// The generator's coefficients, highest degree first, without the leading 1
    /// (it is monic, and the division below never needs it).
    static func generator(degree: Int) -> [UInt8] {
        precondition((1...255).contains(degree), "a QR block has 1...255 ECC codewords")
        // Start from g(x) = 1 and multiply by (x − α^i) one root at a time; in GF(2^8)
        // subtraction is XOR, so (x − r) is (x + r).
        var coefficients = [UInt8](repeating: 0, count: degree)
        coefficients[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for j in 0..<degree {
                coefficients[j] = GaloisField.multiply(coefficients[j], root)
                if j + 1 < degree { coefficients[j] ^= coefficients[j + 1] }
            }
            root = GaloisField.multiply(root, 0x02)
        }
        return coefficients
    }

    /// The `generator.count` ECC codewords for `data`, by polynomial long division
    /// (a linear-feedback shift register: one step per data codeword).
    static func remainder(_ data: [UInt8], generator: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: generator.count)
        for byte in data {
            let factor = byte ^ result[0]
            result.removeFirst()
            result.append(0)
            for i in 0..<result.count {
                result[i] ^= GaloisField.multiply(generator[i], factor)
            }
        }
        return result
    }
}
