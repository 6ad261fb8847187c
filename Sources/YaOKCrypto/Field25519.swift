/// Arithmetic modulo p = 2^255 − 19 for the two maps between Curve25519's forms that
/// libsodium does not export on their own: Edwards y to the X25519 u of the same point
/// (`montgomeryU`), and back (XEdDSA's convert_mont, `XEdDSA.edwardsKey`).
///
/// Why the first exists: libsodium 1.0.18's crypto_scalarmult_base runs on x86_64 (its
/// sandy2x code) a full Montgomery ladder, as slow as a variable-base X25519 (~55 µs), while
/// its Ed25519 fixed-base multiplication with precomputed tables takes ~24 µs. Its ref10 code
/// makes the X25519 public key exactly that way, but its map from Edwards to Montgomery is
/// not exported alone (crypto_sign_ed25519_pk_to_curve25519 adds a subgroup check costing a
/// full scalar multiplication), so `Sodium.x25519PublicKey` multiplies with libsodium and
/// maps here.
///
/// NOT constant-time (the final reduction and `isCanonical` compare and branch): it only
/// ever sees public values, Ed25519 and X25519 public keys. Secrets stay in libsodium.
/// Representation: five 51-bit limbs (ref10's 64-bit layout), products in UInt128.
struct Field25519 {
    private var l0, l1, l2, l3, l4: UInt64

    private static let mask: UInt64 = (1 << 51) - 1

    private init(_ l0: UInt64, _ l1: UInt64, _ l2: UInt64, _ l3: UInt64, _ l4: UInt64) {
        (self.l0, self.l1, self.l2, self.l3, self.l4) = (l0, l1, l2, l3, l4)
    }

    static let one = Field25519(1, 0, 0, 0, 0)

    /// The X25519 public key (u, 32 bytes little-endian, canonical) of the Ed25519 point whose
    /// compressed encoding is `edwards` (y little-endian, x's sign in the top bit, ignored).
    /// The identity point (y = 1, u infinite) gives u = 0, as ref10's map does (it inverts
    /// 0 to 0); a y of p or more counts modulo p.
    static func montgomeryU(edwardsY edwards: [UInt8]) -> [UInt8] {
        let y = Field25519(littleEndian: edwards)
        return ((one + y) * (one - y).inverse).littleEndianBytes
    }

    /// Whether 32 little-endian bytes encode a number below p (and so the top bit is clear).
    static func isCanonical(_ bytes: [UInt8]) -> Bool {
        guard bytes[31] & 0x80 == 0 else { return false }
        guard bytes[31] == 0x7F, bytes[1...30].allSatisfy({ $0 == 0xFF }) else { return true }
        return bytes[0] < 0xED
    }

    var isZero: Bool { littleEndianBytes.allSatisfy { $0 == 0 } }

    /// The 255 low bits of 32 little-endian bytes (bit 255 dropped); any value below 2^255,
    /// so not necessarily reduced below p.
    init(littleEndian bytes: [UInt8]) {
        precondition(bytes.count == 32, "a field element is 32 bytes")
        func word(_ i: Int) -> UInt64 {
            (0..<8).reduce(0) { $0 | UInt64(bytes[8 * i + $1]) << (8 * $1) }
        }
        let w0 = word(0), w1 = word(1), w2 = word(2), w3 = word(3) & ~(1 << 63)
        self.init(w0 & Self.mask, (w0 >> 51 | w1 << 13) & Self.mask, (w1 >> 38 | w2 << 26) & Self.mask,
                  (w2 >> 25 | w3 << 39) & Self.mask, w3 >> 12)
    }

    /// The value reduced below p, 32 bytes little-endian: the only canonical encoding.
    var littleEndianBytes: [UInt8] {
        var r = self.carried.carried  // every limb below 2^51: a value below 2^255
        let top = Self.mask
        if r.l4 == top, r.l3 == top, r.l2 == top, r.l1 == top, r.l0 >= top - 18 {  // p ≤ value < 2^255
            r = Field25519(r.l0 - (top - 18), 0, 0, 0, 0)
        }
        let words = [r.l0 | r.l1 << 51, r.l1 >> 13 | r.l2 << 38, r.l2 >> 26 | r.l3 << 25, r.l3 >> 39 | r.l4 << 12]
        return words.flatMap { w in (0..<8).map { UInt8(truncatingIfNeeded: w >> (8 * $0)) } }
    }

    /// One pass of carries, the top limb's folded back times 19 (2^255 ≡ 19): limbs below
    /// 2^51 but the lowest, which may exceed it by 19 × the carry (a second pass clears that).
    private var carried: Field25519 {
        var r = self
        r.l1 &+= r.l0 >> 51; r.l0 &= Self.mask
        r.l2 &+= r.l1 >> 51; r.l1 &= Self.mask
        r.l3 &+= r.l2 >> 51; r.l2 &= Self.mask
        r.l4 &+= r.l3 >> 51; r.l3 &= Self.mask
        r.l0 &+= 19 &* (r.l4 >> 51); r.l4 &= Self.mask
        return r
    }

    static func + (a: Field25519, b: Field25519) -> Field25519 {
        Field25519(a.l0 &+ b.l0, a.l1 &+ b.l1, a.l2 &+ b.l2, a.l3 &+ b.l3, a.l4 &+ b.l4).carried
    }

    /// a + 2p − b limb by limb, so that no limb goes below zero (b's limbs are below 2^52 − 38).
    static func - (a: Field25519, b: Field25519) -> Field25519 {
        let twoP0: UInt64 = (1 << 52) - 38, twoP: UInt64 = (1 << 52) - 2
        return Field25519(a.l0 &+ twoP0 &- b.l0, a.l1 &+ twoP &- b.l1, a.l2 &+ twoP &- b.l2,
                          a.l3 &+ twoP &- b.l3, a.l4 &+ twoP &- b.l4).carried
    }

    /// Schoolbook product of the limbs; the terms past 2^255 come back times 19.
    static func * (a: Field25519, b: Field25519) -> Field25519 {
        let m = Self.product, b1 = 19 &* b.l1, b2 = 19 &* b.l2, b3 = 19 &* b.l3, b4 = 19 &* b.l4
        let r0 = m(a.l0, b.l0) &+ m(a.l1, b4) &+ m(a.l2, b3) &+ m(a.l3, b2) &+ m(a.l4, b1)
        let r1 = m(a.l0, b.l1) &+ m(a.l1, b.l0) &+ m(a.l2, b4) &+ m(a.l3, b3) &+ m(a.l4, b2)
        let r2 = m(a.l0, b.l2) &+ m(a.l1, b.l1) &+ m(a.l2, b.l0) &+ m(a.l3, b4) &+ m(a.l4, b3)
        let r3 = m(a.l0, b.l3) &+ m(a.l1, b.l2) &+ m(a.l2, b.l1) &+ m(a.l3, b.l0) &+ m(a.l4, b4)
        let r4 = m(a.l0, b.l4) &+ m(a.l1, b.l3) &+ m(a.l2, b.l2) &+ m(a.l3, b.l1) &+ m(a.l4, b.l0)
        return reduced(r0, r1, r2, r3, r4)
    }

    /// The square, with the symmetric products counted once (doubled): the inversion is
    /// almost all squarings.
    var squared: Field25519 {
        let m = Self.product, d0 = 2 &* l0, d1 = 2 &* l1, d2 = 2 &* l2
        let f3 = 19 &* l3, f4 = 19 &* l4
        let r0 = m(l0, l0) &+ m(d1, f4) &+ m(d2, f3)
        let r1 = m(d0, l1) &+ m(d2, f4) &+ m(l3, f3)
        let r2 = m(d0, l2) &+ m(l1, l1) &+ m(2 &* l3, f4)
        let r3 = m(d0, l3) &+ m(d1, l2) &+ m(l4, f4)
        let r4 = m(d0, l4) &+ m(d1, l3) &+ m(l2, l2)
        return Self.reduced(r0, r1, r2, r3, r4)
    }

    private static func product(_ x: UInt64, _ y: UInt64) -> UInt128 { UInt128(x) &* UInt128(y) }

    /// Wide limbs (each below 2^115) carried down to 51 bits.
    private static func reduced(_ r0: UInt128, _ r1: UInt128, _ r2: UInt128, _ r3: UInt128, _ r4: UInt128) -> Field25519 {
        var r1 = r1, r2 = r2, r3 = r3, r4 = r4
        let mask = UInt128(Self.mask)
        r1 &+= r0 >> 51
        r2 &+= r1 >> 51
        r3 &+= r2 >> 51
        r4 &+= r3 >> 51
        let l0 = UInt64(truncatingIfNeeded: r0 & mask) &+ 19 &* UInt64(truncatingIfNeeded: r4 >> 51)
        return Field25519(l0 & Self.mask, UInt64(truncatingIfNeeded: r1 & mask) &+ (l0 >> 51),
                          UInt64(truncatingIfNeeded: r2 & mask), UInt64(truncatingIfNeeded: r3 & mask),
                          UInt64(truncatingIfNeeded: r4 & mask))
    }

    private func squared(times n: Int) -> Field25519 {
        var r = self
        for _ in 0..<n { r = r.squared }
        return r
    }

    /// self^(p − 2) (Fermat), ref10's chain of 254 squarings and 11 products; 0 gives 0.
    var inverse: Field25519 {
        let z2 = squared
        let z9 = z2.squared(times: 2) * self
        let z11 = z9 * z2
        let z2_5_0 = z11.squared * z9  // z^(2^5 − 1)
        let z2_10_0 = z2_5_0.squared(times: 5) * z2_5_0
        let z2_20_0 = z2_10_0.squared(times: 10) * z2_10_0
        let z2_40_0 = z2_20_0.squared(times: 20) * z2_20_0
        let z2_50_0 = z2_40_0.squared(times: 10) * z2_10_0
        let z2_100_0 = z2_50_0.squared(times: 50) * z2_50_0
        let z2_200_0 = z2_100_0.squared(times: 100) * z2_100_0
        let z2_250_0 = z2_200_0.squared(times: 50) * z2_50_0
        return z2_250_0.squared(times: 5) * z11  // z^(2^255 − 21) = z^(p − 2)
    }
}
