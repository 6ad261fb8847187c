/// Arithmetic in GF(2^8) with the QR code's field polynomial x^8 + x^4 + x^3 + x^2 + 1
/// (0x11D) and generator α = 2, through log and antilog tables: a multiplication is then
/// two lookups and an addition instead of a bit loop.
enum GaloisField {
    /// exp[i] = α^i for i in 0..<255, repeated once more so that exp[log a + log b]
    /// needs no modulo.
    static let exp: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 510)
        var x: UInt16 = 1
        for i in 0..<255 {
            table[i] = UInt8(x)
            table[i + 255] = UInt8(x)
            x <<= 1
            if x & 0x100 != 0 { x ^= 0x11D }
        }
        return table
    }()

    /// log[a] for a ≠ 0; log[0] is never read (0 has no logarithm).
    static let log: [Int] = {
        var table = [Int](repeating: 0, count: 256)
        for i in 0..<255 { table[Int(exp[i])] = i }
        return table
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        if a == 0 || b == 0 { return 0 }
        return exp[log[Int(a)] + log[Int(b)]]
    }
}
