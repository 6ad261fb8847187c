/// The simulator's own random numbers: SplitMix64 to spread a seed, then xoshiro256**.
/// Not SystemRandomNumberGenerator (different every run) nor Swift's default generator
/// (unspecified algorithm): a scenario must give the same contacts, workload and result on
/// every run and machine for a given seed.
public struct SimRandom: RandomNumberGenerator, Sendable {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    public init(seed: UInt64) {
        var x = seed
        func splitMix() -> UInt64 {
            x &+= 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s = (splitMix(), splitMix(), splitMix(), splitMix())
    }

    /// An independent stream for one purpose (contacts, workload, a router), so that adding
    /// draws to one does not shift the others.
    public init(seed: UInt64, stream: String) {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325   // FNV-1a of the stream name
        for b in stream.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        self.init(seed: seed ^ h)
    }

    public mutating func next() -> UInt64 {
        let result = rotl(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = rotl(s.3, 45)
        return result
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// Uniform in [0, n) without modulo bias (Lemire's method needs 128-bit multiply; a
    /// rejection loop is simpler and just as exact). n ≥ 1.
    public mutating func below(_ n: Int) -> Int {
        precondition(n >= 1)
        let bound = UInt64(n)
        let limit = UInt64.max - UInt64.max % bound
        while true {
            let x = next()
            if x < limit { return Int(x % bound) }
        }
    }

    /// Uniform in [0, 1) with 53 bits.
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// Exponentially distributed with the given mean (> 0).
    public mutating func exponential(mean: Double) -> Double {
        -mean * SimRandom.ln(1 - unit())
    }

    /// The natural logarithm of x > 0, from +, −, ×, ÷ alone (each correctly rounded by
    /// IEEE 754, so the same bits everywhere): the C library's log may differ in the last
    /// place between versions and machines, and one such bit would change a contact time and
    /// the run's hash. x = m·2^e with m in [√½, √2); ln m = 2·atanh((m−1)/(m+1)), whose series
    /// in s² ≤ 0.03 is exact to double precision after 20 terms.
    static func ln(_ x: Double) -> Double {
        guard x > 0, x.isFinite else { return x == 0 ? -.infinity : .nan }
        var e = Double(x.exponent)
        var m = x.significand
        if m > 1.4142135623730951 {
            m /= 2
            e += 1
        }
        let s = (m - 1) / (m + 1), s2 = s * s
        var term = s, sum = 0.0
        for k in stride(from: 1.0, through: 41.0, by: 2.0) {
            sum += term / k
            term *= s2
        }
        return 2 * sum + e * 0.6931471805599453
    }
}
