import Testing
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
}
