import Testing
import YaOKSupport
@testable import YaOKCrypto

/// Field25519 against values computed independently (Python's integers, mod 2^255 − 19):
/// its limbs' carries, the final reduction below p, and the Edwards-to-Montgomery map on
/// inputs no real public key reaches (y = 1, y = −1, encodings of p and above).
@Suite struct Field25519Tests {
    struct Operation {
        let a, b, sum, difference, product, inverseOfA: String
    }

    /// Pairs of operands, each next to the following: limb boundaries (2^51, 2^102, 2^204),
    /// p − 1, p and above (2^255 − 1 = p + 18), then random values below 2^255.
    static let operations: [Operation] = [
        .init(a: "0000000000000000000000000000000000000000000000000000000000000000",
              b: "0100000000000000000000000000000000000000000000000000000000000000",
              sum: "0100000000000000000000000000000000000000000000000000000000000000",
              difference: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              product: "0000000000000000000000000000000000000000000000000000000000000000",
              inverseOfA: "0000000000000000000000000000000000000000000000000000000000000000"),
        .init(a: "0100000000000000000000000000000000000000000000000000000000000000",
              b: "1300000000000000000000000000000000000000000000000000000000000000",
              sum: "1400000000000000000000000000000000000000000000000000000000000000",
              difference: "dbffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              product: "1300000000000000000000000000000000000000000000000000000000000000",
              inverseOfA: "0100000000000000000000000000000000000000000000000000000000000000"),
        .init(a: "1300000000000000000000000000000000000000000000000000000000000000",
              b: "ffffffffffff0700000000000000000000000000000000000000000000000000",
              sum: "1200000000000800000000000000000000000000000000000000000000000000",
              difference: "010000000000f8ffffffffffffffffffffffffffffffffffffffffffffffff7f",
              product: "edffffffffff9700000000000000000000000000000000000000000000000000",
              inverseOfA: "14ca6b28afa1bc86f21aca6b28afa1bc86f21aca6b28afa1bc86f21aca6b282f"),
        .init(a: "ffffffffffff0700000000000000000000000000000000000000000000000000",
              b: "0000000000000800000000000000000000000000000000000000000000000000",
              sum: "ffffffffffff0f00000000000000000000000000000000000000000000000000",
              difference: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              product: "000000000000f8ffffffffff3f00000000000000000000000000000000000000",
              inverseOfA: "89e3388ee338721cc7711cc791e3388ee3388e1cc7711cc771e4388ee3388e23"),
        .init(a: "0000000000000800000000000000000000000000000000000000000000000000",
              b: "ffffffffffffffffffffffff3f00000000000000000000000000000000000000",
              sum: "ffffffffffff0700000000004000000000000000000000000000000000000000",
              difference: "eeffffffffff070000000000c0ffffffffffffffffffffffffffffffffffff7f",
              product: "000000000000f8ffffffffffffffffffffffff01000000000000000000000000",
              inverseOfA: "f5ffffffffffffffffffffffffffffffffffffffffffffffffafa1bc86f21a4a"),
        .init(a: "ffffffffffffffffffffffff3f00000000000000000000000000000000000000",
              b: "0000000000000000000000000000000000000000000000000010000000000000",
              sum: "ffffffffffffffffffffffff3f00000000000000000000000010000000000000",
              difference: "ecffffffffffffffffffffff3f000000000000000000000000f0ffffffffff7f",
              product: "edffffffffff97000000000000000000000000000000000000f0ffffffffff7f",
              inverseOfA: "8d3ee9933ee9d2277dd2277dfaa44ffaa44fbaf4499ff4499f3ee9933ee9932e"),
        .init(a: "0000000000000000000000000000000000000000000000000010000000000000",
              b: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              sum: "ffffffffffffffffffffffffffffffffffffffffffffffffff0f000000000000",
              difference: "0100000000000000000000000000000000000000000000000010000000000000",
              product: "edffffffffffffffffffffffffffffffffffffffffffffffffefffffffffff7f",
              inverseOfA: "f8ffffffffffd7505e43790de53594d7505e43790de53594d7505e43790de535"),
        .init(a: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              b: "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              sum: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              difference: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              product: "0000000000000000000000000000000000000000000000000000000000000000",
              inverseOfA: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        .init(a: "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              b: "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              sum: "1200000000000000000000000000000000000000000000000000000000000000",
              difference: "dbffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              product: "0000000000000000000000000000000000000000000000000000000000000000",
              inverseOfA: "0000000000000000000000000000000000000000000000000000000000000000"),
        .init(a: "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              b: "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              sum: "2400000000000000000000000000000000000000000000000000000000000000",
              difference: "0000000000000000000000000000000000000000000000000000000000000000",
              product: "4401000000000000000000000000000000000000000000000000000000000000",
              inverseOfA: "89e3388ee3388ee3388ee3388ee3388ee3388ee3388ee3388ee3388ee3388e23"),
        .init(a: "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              b: "f6ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff3f",
              sum: "0800000000000000000000000000000000000000000000000000000000000040",
              difference: "0900000000000000000000000000000000000000000000000000000000000040",
              product: "e4ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
              inverseOfA: "89e3388ee3388ee3388ee3388ee3388ee3388ee3388ee3388ee3388ee3388e23"),
        .init(a: "f6ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff3f",
              b: "6800d8e7046a09b93b5aaeafe0cf63c94af339c4404c45e114ee94e7b163b526",
              sum: "5e00d8e7046a09b93b5aaeafe0cf63c94af339c4404c45e114ee94e7b163b566",
              difference: "8eff2718fb95f646c4a551501f309c36b50cc63bbfb3ba1eeb116b184e9c4a19",
              product: "b9ff138cfd4a7b23e2d228a80f184e9b5a06e39ddf595d8ff588350c274ea56c",
              inverseOfA: "ebffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        .init(a: "6800d8e7046a09b93b5aaeafe0cf63c94af339c4404c45e114ee94e7b163b526",
              b: "2b0d8442d7e78bac31eebea2df5a6ed97685aae764fcfc19b2ef43df0b3cd253",
              sum: "930d5c2adc5195656d486d52c02ad2a2c178e4aba54842fbc6ddd8c6bd9f877a",
              difference: "2af353a52d827d0c0a6cef0c0175f5efd36d8fdcdb4f48c762fe5008a627e352",
              product: "e3903d3d063b5d7a4d52e2870f4f763d2d201e0b6b98c12a6e9b8b6d34a36c64",
              inverseOfA: "2e686a968d0bd8ae24ae1ac278e0946ec42428c513060429eca59dd9d0c53c07"),
        .init(a: "2b0d8442d7e78bac31eebea2df5a6ed97685aae764fcfc19b2ef43df0b3cd253",
              b: "423dac920e43cae7d15c5c2b012ae806549359692c212068032b6cfe1cbc3313",
              sum: "6d4a30d5e52a5694034b1bcee08456e0ca180451911d1d82b51ab0dd28f80567",
              difference: "e9cfd7afc8a4c1c45f916277de3086d222f2507e38dbdcb1aec4d7e0ee7f9e40",
              product: "6b5aa59f461aa216b463ccceec36bb39905381e4dd354aee1336b84618e8bc08",
              inverseOfA: "84a4c5aeba1c779af8bba7389bee8afb1ef6b7f488cd236aab694b67848c7718"),
        .init(a: "423dac920e43cae7d15c5c2b012ae806549359692c212068032b6cfe1cbc3313",
              b: "b9726e1ad30e05206c1ab3516da3727957c335f3007fa6949ced0b731ba47769",
              sum: "fbaf1aade151cf073e770f7d6ecd5a80ab568f5c2da0c6fc9f1878713860ab7c",
              difference: "76ca3d783b34c5c76542a9d99386758dfccf23762ba279d3663d608b0118bc29",
              product: "a003467ea6a9b1cc83ecfa3d2e4b41d677893ccd1f862b8cb4dcc91d1cb4fd08",
              inverseOfA: "7273c1c1080d73ee892c63961ace78ba4d55b6c9e860d32c94caa3c979de925e"),
        .init(a: "b9726e1ad30e05206c1ab3516da3727957c335f3007fa6949ced0b731ba47769",
              b: "0000000000000000000000000000000000000000000000000000000000000000",
              sum: "b9726e1ad30e05206c1ab3516da3727957c335f3007fa6949ced0b731ba47769",
              difference: "b9726e1ad30e05206c1ab3516da3727957c335f3007fa6949ced0b731ba47769",
              product: "0000000000000000000000000000000000000000000000000000000000000000",
              inverseOfA: "0ce5d07af4d171d31ef601a9fa9f7c8c2b9c00cbf766b862a3ce5a5e4ebb3660"),
    ]

    static func element(_ hex: String) -> Field25519 { Field25519(littleEndian: Hex.decode(hex)!) }

    @Test func arithmeticMatchesIndependentValues() {
        for op in Self.operations {
            let a = Self.element(op.a), b = Self.element(op.b)
            #expect(Hex.encode((a + b).littleEndianBytes) == op.sum, "\(op.a) + \(op.b)")
            #expect(Hex.encode((a - b).littleEndianBytes) == op.difference, "\(op.a) − \(op.b)")
            #expect(Hex.encode((a * b).littleEndianBytes) == op.product, "\(op.a) × \(op.b)")
            #expect(Hex.encode(a.inverse.littleEndianBytes) == op.inverseOfA, "1 / \(op.a)")
            #expect((a * a).littleEndianBytes == a.squared.littleEndianBytes, "\(op.a)²")
        }
    }

    /// The Edwards y (little-endian) and the X25519 u it maps to: u = (1 + y) / (1 − y).
    static let montgomeryVectors: [(name: String, y: String, u: String)] = [
        ("0", "0000000000000000000000000000000000000000000000000000000000000000", "0100000000000000000000000000000000000000000000000000000000000000"),
        ("1: the identity point, u infinite, 0 as in ref10", "0100000000000000000000000000000000000000000000000000000000000000", "0000000000000000000000000000000000000000000000000000000000000000"),
        ("2", "0200000000000000000000000000000000000000000000000000000000000000", "eaffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        ("p − 1: 1 − y = 2, 1 + y = 0", "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "0000000000000000000000000000000000000000000000000000000000000000"),
        ("p − 2", "ebffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "a4aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2a"),
        ("p, a non-canonical 0", "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "0100000000000000000000000000000000000000000000000000000000000000"),
        ("p + 1, a non-canonical 1", "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "0000000000000000000000000000000000000000000000000000000000000000"),
        ("p + 2, a non-canonical 2", "efffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "eaffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        ("2^255 − 1, a non-canonical 18", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "3f4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b"),
        ("2^51 − 1", "ffffffffffff0700000000000000000000000000000000000000000000000000", "237662277662a7d8899dd8899d6227766227768a9dd8899dd829766227766227"),
        ("2^51", "0000000000000800000000000000000000000000000000000000000000000000", "da388ee3388e1bc7711cc771dc388ee3388ee3c6711cc7711c378ee3388ee338"),
        ("2^204", "0000000000000000000000000000000000000000000000000010000000000000", "b91e9d2994b6446bbba5b79dbe0419a4abbb5d4591522dfe1953ecd19942694b"),
        ("(p − 1) / 2", "f6ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff3f", "4955555555555555555555555555555555555555555555555555555555555555"),
    ]

    @Test func montgomeryUMatchesIndependentValues() {
        for v in Self.montgomeryVectors {
            var y = Hex.decode(v.y)!
            #expect(Hex.encode(Field25519.montgomeryU(edwardsY: y)) == v.u, "y = \(v.name)")
            y[31] |= 0x80  // x's sign: not part of y
            #expect(Hex.encode(Field25519.montgomeryU(edwardsY: y)) == v.u, "y = \(v.name), sign bit set")
        }
    }

    /// Every value from p to 2^255 − 1 (the encodings a 255-bit input can have above p) comes
    /// out reduced; 0 ..< 19 stays as it is.
    @Test func encodingIsCanonical() {
        for k in 0..<19 {
            var aboveP = [UInt8](repeating: 0xFF, count: 32)
            aboveP[0] = 0xED + UInt8(k)
            aboveP[31] = 0x7F
            let reduced = [UInt8(k)] + [UInt8](repeating: 0, count: 31)
            #expect(Field25519(littleEndian: aboveP).littleEndianBytes == reduced, "p + \(k)")
            #expect(Field25519(littleEndian: reduced).littleEndianBytes == reduced, "\(k)")
            #expect(Field25519.isCanonical(reduced) && !Field25519.isCanonical(aboveP), "\(k)")
        }
        for _ in 0..<200 {
            var bytes = Sodium.randomBytes(32)
            bytes[31] &= 0x7F
            if Field25519.isCanonical(bytes) { #expect(Field25519(littleEndian: bytes).littleEndianBytes == bytes) }
        }
    }

    @Test func zeroAndOne() {
        let zero = Field25519(littleEndian: [UInt8](repeating: 0, count: 32))
        #expect(zero.isZero && (zero - Field25519.one + Field25519.one).isZero && zero.inverse.isZero)
        let two = Field25519.one + Field25519.one
        #expect((two * two.inverse).littleEndianBytes == Field25519.one.littleEndianBytes)
    }
}
