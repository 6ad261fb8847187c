import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct EncodingTests {
    @Test func base64URLKnownAnswers() {
        // RFC 4648 §10 test vectors, without padding.
        let cases = [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"),
                     ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in cases {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.decode("Zg==") == nil)
        #expect(Base64URL.decode("Zh") == nil)  // non-zero trailing bits
        #expect(Base64URL.decode("Z") == nil)
        #expect(Base64URL.decode("a+b/") == nil)
    }

    @Test func base64URLRoundTripsRandomBytes() {
        for n in 0..<100 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }

    @Test func hex() {
        #expect(Hex.encode([0x00, 0xab, 0xff]) == "00abff")
        #expect(Hex.encode([0xab], uppercase: true) == "AB")
        #expect(Hex.decode("00abFF") == [0x00, 0xab, 0xff])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    @Test func json() {
        let value = JSON.object([("a", .int(1)), ("b", .string("q\"\\\n\u{1}é")), ("c", .array([.bool(true), .null]))])
        #expect(value.serialized == #"{"a":1,"b":"q\"\\\n\u0001é","c":[true,null]}"#)
    }
}
