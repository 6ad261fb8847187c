internal import CSodium
import YaOKSupport
import YaOKWire

/// Pads message bodies to a few fixed sizes so that ciphertext length says little about
/// the text: ISO/IEC 7816-4 padding (0x80 then zeros, libsodium's sodium_pad) up to the
/// smallest bucket that holds the body plus one byte.
package enum Padding {
    /// 64, 128, 256, … 16384 bytes.
    static let buckets: [Int] = (0...8).map { 64 << $0 }

    static func bucket(for length: Int) -> Int? {
        buckets.first { $0 >= length + 1 }
    }

    package static func pad(_ body: [UInt8]) throws -> [UInt8] {
        guard let size = bucket(for: body.count) else { throw YaOKError(.messageTooLarge) }
        var out = body + [UInt8](repeating: 0, count: size - body.count)
        var paddedLength = 0
        let rc = out.withUnsafeMutableBufferPointer {
            sodium_pad(&paddedLength, $0.baseAddress!, body.count, size, size)
        }
        guard rc == 0, paddedLength == size else { throw YaOKError(.internal, "Padding failed") }
        return out
    }

    /// nil when the padding is malformed or the size is not a bucket.
    package static func unpad(_ padded: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard buckets.contains(padded.count) else { return nil }
        var length = 0
        let rc = padded.withUnsafeBufferPointer {
            sodium_unpad(&length, $0.baseAddress!, $0.count, $0.count)
        }
        guard rc == 0 else { return nil }
        return padded.prefix(length)
    }
}
