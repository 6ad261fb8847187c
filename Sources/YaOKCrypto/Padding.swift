import YaOKSupport
import YaOKWire

/// Pads message bodies to a few fixed sizes so that ciphertext length says little about
/// the text: ISO/IEC 7816-4 padding (0x80 then zeros, the bytes libsodium's sodium_pad
/// writes) up to the smallest bucket that holds the body plus one byte.
///
/// Done here rather than by sodium_pad/sodium_unpad: called with the whole bucket as the
/// block size, as the format needs, those walk every byte through a constant-time barrier
/// (about 20 µs for a 16 KiB bucket), and a 10 KB message is padded or unpadded some six
/// times between its sender and its receiver's store: they were 15 % of the CPU of a batch
/// of 10 KB messages (`yaok-bench bulk`). `unpad` still reads every byte of the bucket the
/// same way whatever they hold (eight at a time, without branching on them), so its time
/// does not depend on where the body ends.
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

    /// `body`, 0x80, then zeros up to the bucket: one allocation of the bucket's size, the
    /// body copied once.
    package static func pad(_ body: [UInt8], buckets sizes: [Int] = buckets) throws -> [UInt8] {
        guard let size = bucket(for: body.count, in: sizes) else { throw YaOKError(.messageTooLarge) }
        return [UInt8](unsafeUninitializedCapacity: size) { out, initialized in
            let rest = body.withUnsafeBufferPointer { source in
                out.initialize(fromContentsOf: source)
            }
            out[rest] = 0x80
            out[(rest + 1)...].initialize(repeating: 0)
            initialized = size
        }
    }

    /// nil when the padding is malformed or the size is not a bucket.
    package static func unpad(_ padded: ArraySlice<UInt8>, buckets sizes: [Int] = buckets) -> ArraySlice<UInt8>? {
        guard sizes.contains(padded.count), let length = bodyLength(padded) else { return nil }
        return padded.prefix(length)
    }

    /// Where the 0x80 marker is, which is the body's length: the last byte that is not zero
    /// must be it (nil when it is another value, or every byte is zero). Every byte is read,
    /// eight at a time, and which word was the last non-zero one is kept by masks, not
    /// branches; only the final verdict on that word branches.
    static func bodyLength(_ padded: ArraySlice<UInt8>) -> Int? {
        padded.withUnsafeBytes { raw -> Int? in
            var lastWord: UInt64 = 0
            var lastEnd = 0  // byte offset just past the last non-zero word (0: none)
            func take(_ word: UInt64, end: Int) {
                let nonZero = (word | (0 &- word)) >> 63  // 1 when word != 0
                let mask = 0 &- nonZero
                lastWord = (word & mask) | (lastWord & ~mask)
                lastEnd = (end & Int(bitPattern: UInt(mask))) | (lastEnd & ~Int(bitPattern: UInt(mask)))
            }
            let whole = raw.count / 8
            for i in 0..<whole {
                take(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)), end: i * 8 + 8)
            }
            if raw.count > whole * 8 {
                // A size that is not a multiple of 8 (no bucket is): the tail as a short word.
                var tail: UInt64 = 0
                for j in whole * 8..<raw.count { tail |= UInt64(raw[j]) << (8 * UInt64(j - whole * 8)) }
                take(tail, end: whole * 8 + 8)
            }
            guard lastWord != 0 else { return nil }
            // Little-endian: the highest non-zero byte of the word is the last one in memory.
            let byte = (63 - lastWord.leadingZeroBitCount) / 8
            guard (lastWord >> UInt64(8 * byte)) & 0xff == 0x80 else { return nil }
            return lastEnd - 8 + byte
        }
    }
}
