import YaOKSupport

/// A bounds-checked big-endian reader over untrusted bytes. Every read checks the length
/// first and throws `malformedPacket` naming the field, so no decoder can index past the
/// end or trust a length it has not compared with what is actually there.
/// Pure Swift (no C modules): the fuzz build compiles it alone.
struct ByteReader {
    private let bytes: ArraySlice<UInt8>
    private(set) var offset: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.offset = bytes.startIndex
    }

    var remaining: Int { bytes.endIndex - offset }

    private mutating func need(_ count: Int, _ field: String) throws {
        guard count <= remaining else {
            throw YaOKError(.malformedPacket,
                            "Malformed packet: truncated at \(field) (needs \(count) bytes, \(remaining) left)")
        }
    }

    mutating func u8(_ field: String) throws -> UInt8 {
        try need(1, field)
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16(_ field: String) throws -> UInt16 {
        UInt16(try uint(2, field))
    }

    /// An unsigned big-endian integer of `count` ≤ 8 bytes.
    mutating func uint(_ count: Int, _ field: String) throws -> UInt64 {
        try need(count, field)
        var value: UInt64 = 0
        for i in offset..<offset + count { value = value << 8 | UInt64(bytes[i]) }
        offset += count
        return value
    }

    mutating func bytes(_ count: Int, _ field: String) throws -> ArraySlice<UInt8> {
        try need(count, field)
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// Everything left (possibly nothing).
    mutating func rest() -> ArraySlice<UInt8> {
        defer { offset = bytes.endIndex }
        return bytes[offset...]
    }
}

/// Big-endian appends, the writer's half of ByteReader.
extension Array where Element == UInt8 {
    package mutating func appendBigEndian(_ value: UInt64, count: Int) {
        for shift in stride(from: (count - 1) * 8, through: 0, by: -8) {
            append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}
