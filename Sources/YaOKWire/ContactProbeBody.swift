import YaOKSupport

/// The bodies of the two link payloads that settle, inside an anonymous link, whether the
/// peer is a contact (docs/PROTOCOL.md §5.9). Here, in the wire module, so that the fuzzer
/// (which links only YaOKSupport and YaOKWire) runs the decoders; making and checking them
/// needs BLAKE2b and lives in YaOKCrypto (ContactRecognition.swift).
///
/// A probe is a 8192-bit filter with exactly 4096 bits set, whoever sends it: markers of up to
/// `capacity` contacts, then random bits up to half. So its bytes and its weight are the same
/// for a node with no contacts and one with hundreds.
public struct ContactProbeBody: Equatable, Sendable {
    public static let length = 1024
    public static let bitCount = length * 8
    public static let setBits = bitCount / 2
    /// Bits per contact marker: 16 positions of 13 bits from one 32-byte MAC.
    public static let bitsPerMarker = 16
    /// Contacts one probe can hold at half weight (4096 / 16).
    public static let capacity = setBits / bitsPerMarker

    public let bytes: [UInt8]

    /// Exactly `length` bytes with exactly `setBits` bits set, else `malformedPacket`: a
    /// denser filter would match anything. Constant work: one pass over 1024 bytes.
    public init(decoding body: ArraySlice<UInt8>) throws {
        guard body.count == Self.length else {
            throw YaOKError(.malformedPacket, "A contact probe is \(Self.length) bytes, got \(body.count)")
        }
        let weight = body.reduce(0) { $0 + $1.nonzeroBitCount }
        guard weight == Self.setBits else {
            throw YaOKError(.malformedPacket, "A contact probe has exactly \(Self.setBits) bits set, this one \(weight)")
        }
        bytes = Array(body)
    }

    /// The 16 bit positions a 32-byte marker MAC names: each big-endian u16 of it, low 13 bits.
    public static func positions(_ marker: [UInt8]) -> [Int] {
        stride(from: 0, to: min(marker.count, 2 * bitsPerMarker) - 1, by: 2).map {
            (Int(marker[$0]) << 8 | Int(marker[$0 + 1])) & (bitCount - 1)
        }
    }

    /// Bit `i` is bit `7 - i % 8` (most significant first) of byte `i / 8`.
    public func contains(_ position: Int) -> Bool {
        bytes[position >> 3] & (0x80 >> UInt8(position & 7)) != 0
    }

    public func containsAll(_ positions: [Int]) -> Bool {
        positions.allSatisfy(contains)
    }
}

/// A contact proof body: one 32-byte MAC (§5.9). Another length → `malformedPacket`.
public struct ContactProofBody: Equatable, Sendable {
    public static let length = 32
    public let mac: [UInt8]

    public init(decoding body: ArraySlice<UInt8>) throws {
        guard body.count == Self.length else {
            throw YaOKError(.malformedPacket, "A contact proof is \(Self.length) bytes, got \(body.count)")
        }
        mac = Array(body)
    }
}
