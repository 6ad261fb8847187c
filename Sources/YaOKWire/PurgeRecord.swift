import YaOKSupport

/// A batch of purge claims (docs/PROTOCOL.md §10.6): the preimages of carried packets'
/// claim hashes, published by the recipient that opened them (or the sender that made
/// them). A carrier that holds a packet whose claim hash is `H(claim)` deletes it.
///
///     offset size field
///      0      1   version (1)
///      1      1   type (0x07, purge)
///      2      1   count, 1 … 255
///      3   16×n   claims, strictly ascending (no duplicates; one canonical encoding)
///
/// Pure Swift (fuzz build); checking a claim against a hash is in YaOKCrypto.
public struct PurgeRecord: Equatable, Sendable {
    public static let type: UInt8 = 0x07
    public static let claimLength = 16
    public static let maxClaims = 255
    public static let headerLength = 3
    public static let maxLength = headerLength + maxClaims * claimLength

    /// Sorted ascending, without duplicates.
    public let claims: [[UInt8]]

    /// Sorts and removes duplicates; `invalidArgument` for no claim, more than 255, or a
    /// claim that is not 16 bytes.
    public init(claims: [[UInt8]]) throws {
        guard claims.allSatisfy({ $0.count == Self.claimLength }) else {
            throw YaOKError(.invalidArgument, "A claim is \(Self.claimLength) bytes")
        }
        let sorted = Array(Set(claims)).sorted { $0.lexicographicallyPrecedes($1) }
        guard (1...Self.maxClaims).contains(sorted.count) else {
            throw YaOKError(.invalidArgument, "A purge record holds 1 to \(Self.maxClaims) claims")
        }
        self.claims = sorted
    }

    public func encode() -> [UInt8] {
        var out: [UInt8] = [Wire.version, Self.type, UInt8(claims.count)]
        out.reserveCapacity(Self.headerLength + claims.count * Self.claimLength)
        for claim in claims { out += claim }
        return out
    }

    /// Strict: `unsupportedVersion`, `unknownPacketType` (not 0x07), then `malformedPacket`
    /// for a count of 0, a length other than 3 + 16 × count, or claims not strictly
    /// ascending. The length is checked before anything is copied.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws -> PurgeRecord {
        var r = ByteReader(bytes)
        try Packet.readVersion(&r)
        let type = try r.u8("record type")
        guard type == Self.type else {
            throw YaOKError(.unknownPacketType, "Record type 0x\(Hex.encode([type])) is not a purge record")
        }
        let count = Int(try r.u8("claim count"))
        guard count >= 1 else { throw YaOKError(.malformedPacket, "Malformed purge record: no claim") }
        guard r.remaining == count * claimLength else {
            throw YaOKError(.malformedPacket,
                            "Malformed purge record: \(count) claims need \(count * claimLength) bytes, \(r.remaining) follow")
        }
        var claims: [[UInt8]] = []
        claims.reserveCapacity(count)
        for _ in 0..<count {
            let claim = Array(try r.bytes(claimLength, "claim"))
            if let last = claims.last, !last.lexicographicallyPrecedes(claim) {
                throw YaOKError(.malformedPacket, "Malformed purge record: claims not strictly ascending")
            }
            claims.append(claim)
        }
        return try PurgeRecord(claims: claims)
    }

    public static func decode(_ bytes: [UInt8]) throws -> PurgeRecord { try decode(bytes[...]) }
}
