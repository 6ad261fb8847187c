/// A growing sequence of bits, most significant first: how the data segment (mode,
/// count, payload, terminator) is assembled before it is cut into codewords.
struct BitBuffer {
    private(set) var bits: [Bool] = []

    var count: Int { bits.count }

    /// Appends the low `width` bits of `value`, highest first.
    mutating func append(_ value: UInt32, width: Int) {
        precondition((0...31).contains(width) && value >> UInt32(width) == 0, "value wider than its field")
        for shift in stride(from: width - 1, through: 0, by: -1) {
            bits.append((value >> UInt32(shift)) & 1 == 1)
        }
    }

    /// The bits packed into bytes; a last partial byte is padded with zeros.
    var bytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: (bits.count + 7) / 8)
        for (i, bit) in bits.enumerated() where bit {
            out[i >> 3] |= 0x80 >> UInt8(i & 7)
        }
        return out
    }
}
