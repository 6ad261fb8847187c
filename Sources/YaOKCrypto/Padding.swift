internal import CSodium
import YaOKSupport
import YaOKWire

/// Pads message bodies to a few fixed sizes so that ciphertext length says little about
/// the text: ISO/IEC 7816-4 padding (0x80 then zeros, libsodium's sodium_pad) up to the
/// smallest bucket that holds the body plus one byte.
package enum Padding {
    /// 64, 128, 256, … 16384 bytes: the wire's buckets (a body is at most 10,240 bytes).
    static let buckets: [Int] = (0...8).map { 64 << $0 }
    /// The wire's buckets and one more, 32768 bytes, for the store: a received text that
    /// was repaired (each invalid byte → U+FFFD, 3 bytes) reaches 30,720 bytes
    /// (`Envelope.maxReceivedTextLength`), which no wire bucket holds.
    package static let storeBuckets: [Int] = (0...9).map { 64 << $0 }

    static func bucket(for length: Int, in sizes: [Int] = buckets) -> Int? {
        sizes.first { $0 >= length + 1 }
    }

    package static func pad(_ body: [UInt8], buckets sizes: [Int] = buckets) throws -> [UInt8] {
        guard let size = bucket(for: body.count, in: sizes) else { throw YaOKError(.messageTooLarge) }
        var out = body + [UInt8](repeating: 0, count: size - body.count)
        var paddedLength = 0
        let rc = out.withUnsafeMutableBufferPointer {
            sodium_pad(&paddedLength, $0.baseAddress!, body.count, size, size)
        }
        guard rc == 0, paddedLength == size else { throw YaOKError(.internal, "Padding failed") }
        return out
    }

    /// nil when the padding is malformed or the size is not a bucket.
    package static func unpad(_ padded: ArraySlice<UInt8>, buckets sizes: [Int] = buckets) -> ArraySlice<UInt8>? {
        guard sizes.contains(padded.count) else { return nil }
        var length = 0
        let rc = padded.withUnsafeBufferPointer {
            sodium_unpad(&length, $0.baseAddress!, $0.count, $0.count)
        }
        guard rc == 0 else { return nil }
        return padded.prefix(length)
    }
}
