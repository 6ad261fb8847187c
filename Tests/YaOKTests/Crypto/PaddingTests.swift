import Testing
import CSodium
@testable import YaOKCrypto

/// `Padding.unpad` alone: the envelopes check the bucket again after it, but the store's
/// padded fields (FieldCipher.openPaddedString) rely on it, so unpad itself must refuse a
/// padded body whose size is not one of the buckets, however well formed its padding.
@Suite struct PaddingTests {
    /// ISO/IEC 7816-4 padding of `body` to exactly `size` bytes: 0x80, then zeros.
    static func iso7816(_ body: [UInt8], to size: Int) -> [UInt8] {
        body + [0x80] + [UInt8](repeating: 0, count: size - body.count - 1)
    }

    @Test func everyBucketUnpads() throws {
        let body = Array("hi".utf8)
        for size in Padding.buckets {
            #expect(Padding.unpad(Self.iso7816(body, to: size)[...]).map(Array.init) == body, "bucket \(size)")
        }
        #expect(Padding.unpad(try Padding.pad(body)[...]).map(Array.init) == body)
    }

    @Test(arguments: [3, 63, 65, 100, 127, 129, 1000, 16383, 16385, 32768])
    func wellFormedPaddingOfAnotherSizeIsRefused(size: Int) {
        #expect(!Padding.buckets.contains(size))
        #expect(Padding.unpad(Self.iso7816(Array("hi".utf8), to: size)[...]) == nil)
    }

    // Padding is done in Swift, not by sodium_pad/sodium_unpad (those cost 15 % of a 10 KB
    // batch's CPU): the bytes and the verdicts must stay libsodium's exactly.

    /// What libsodium writes for `body` padded to `size`.
    static func sodiumPadded(_ body: [UInt8], to size: Int) -> [UInt8] {
        var out = body + [UInt8](repeating: 0xee, count: size - body.count)
        var length = 0
        let rc = out.withUnsafeMutableBufferPointer { sodium_pad(&length, $0.baseAddress!, body.count, size, size) }
        #expect(rc == 0 && length == size)
        return out
    }

    /// libsodium's verdict on a padded buffer: the body's length, or nil.
    static func sodiumUnpaddedLength(_ padded: [UInt8]) -> Int? {
        var length = 0
        let rc = padded.withUnsafeBufferPointer { sodium_unpad(&length, $0.baseAddress!, $0.count, $0.count) }
        return rc == 0 ? length : nil
    }

    @Test func padWritesWhatSodiumPadWrites() throws {
        var rng = SystemRandomNumberGenerator()
        // Every length up to 300, and each side of every bucket's edge.
        let lengths = Array(0...300) + Padding.storeBuckets.flatMap { [$0 - 9, $0 - 8, $0 - 2, $0 - 1, $0, $0 + 1] }
        for length in Set(lengths) where length >= 0 && length < Padding.storeBuckets.last! {
            let body = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let padded = try Padding.pad(body, buckets: Padding.storeBuckets)
            let size = Padding.bucket(for: length, in: Padding.storeBuckets)!
            #expect(padded == Self.sodiumPadded(body, to: size), "length \(length)")
            #expect(Padding.unpad(padded[...], buckets: Padding.storeBuckets).map(Array.init) == body, "length \(length)")
        }
        #expect(throws: (any Error).self) { try Padding.pad([UInt8](repeating: 1, count: 16384)) }
    }

    /// Well formed or not (marker missing, another value last, all zeros, a marker in the
    /// last byte, in the first, within and across 8-byte words): the same verdict as
    /// sodium_unpad, for every wire bucket and for sizes that are not multiples of 8.
    @Test func unpadAgreesWithSodiumUnpad() {
        var rng = SystemRandomNumberGenerator()
        for size in Padding.buckets + [9, 13, 71] {
            var cases: [[UInt8]] = [[UInt8](repeating: 0, count: size), [UInt8](repeating: 0x80, count: size)]
            for _ in 0..<300 {
                var bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let end = Int.random(in: 0..<size, using: &rng)  // the last byte that is not zero
                for i in (end + 1)..<size { bytes[i] = 0 }
                switch Int.random(in: 0..<4, using: &rng) {
                case 0, 1: bytes[end] = 0x80
                case 2: bytes[end] = [0x01, 0x7f, 0x81, 0xff, 0x08][Int.random(in: 0..<5, using: &rng)]
                default: bytes[end] = 0x80; if end > 0 { bytes[end - 1] = 0 }
                }
                cases.append(bytes)
            }
            for bytes in cases {
                #expect(Padding.bodyLength(bytes[...]) == Self.sodiumUnpaddedLength(bytes), "size \(size)")
            }
        }
        // A slice that does not start at 0 (the envelopes unpad part of an array).
        let whole = [UInt8](repeating: 7, count: 5) + Self.iso7816(Array("hi".utf8), to: 64)
        #expect(Padding.unpad(whole[5...]).map(Array.init) == Array("hi".utf8))
    }
}
