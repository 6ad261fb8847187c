import YaOKSupport

/// The byte layout of docs/PROTOCOL.md, "Reconciliation". The decoder is strict: a message
/// is accepted only in its one canonical encoding (so whatever it accepts re-encodes to the
/// same bytes, which the fuzzer checks), and every count is compared with the limits and
/// with the bytes actually present before anything is allocated for it.
extension ReconciliationMessage {
    enum Kind: UInt8 {
        case ranges = 1
        case haveWant = 2
    }

    enum Mode: UInt8 {
        case skip = 0
        case fingerprint = 1
        case idList = 2
        case difference = 3
    }

    public func encode() -> [UInt8] {
        var out: [UInt8] = [Self.version]
        switch self {
        case .ranges(let ranges):
            out.append(Kind.ranges.rawValue)
            out.appendVarint(UInt64(ranges.count))
            var previous: UInt64 = 0
            for range in ranges {
                if range.upper.isInfinity {
                    out.appendVarint(0)
                } else {
                    out.appendVarint(range.upper.expiry &- previous &+ 1)
                    previous = range.upper.expiry
                }
                out.append(UInt8(truncatingIfNeeded: range.upper.prefix.count))
                out += range.upper.prefix
                switch range.payload {
                case .skip:
                    out.append(Mode.skip.rawValue)
                case .fingerprint(let fp):
                    out.append(Mode.fingerprint.rawValue)
                    out += fp
                case .idList(let ids):
                    out.append(Mode.idList.rawValue)
                    out.appendVarint(UInt64(ids.count))
                    for id in ids { out += id }
                case .difference(let extra, let missing):
                    out.append(Mode.difference.rawValue)
                    for list in [extra, missing] {
                        out.appendVarint(UInt64(list.count))
                        for id in list { out += id }
                    }
                }
            }
        case .haveWant(let have, let want):
            out.append(Kind.haveWant.rawValue)
            for list in [have, want] {
                out.appendVarint(UInt64(list.count))
                for id in list { out += id }
            }
        }
        return out
    }

    /// The encoded size of one range, for the sender's frame limit (no allocation).
    static func encodedSize(_ range: ReconciliationRange, previousExpiry: UInt64) -> Int {
        let code: UInt64 = range.upper.isInfinity ? 0 : range.upper.expiry &- previousExpiry &+ 1
        var size = varintSize(code) + 1 + range.upper.prefix.count + 1
        switch range.payload {
        case .skip: break
        case .fingerprint: size += fingerprintLength
        case .idList(let ids): size += varintSize(UInt64(ids.count)) + ids.reduce(0) { $0 + $1.count }
        case .difference(let extra, let missing):
            size += varintSize(UInt64(extra.count)) + varintSize(UInt64(missing.count))
                + (extra.count + missing.count) * (extra.first ?? missing.first ?? []).count
        }
        return size
    }

    /// Throws `malformedPacket` (or `unsupportedVersion`) with the rule the bytes break.
    public static func decode(_ bytes: ArraySlice<UInt8>, parameters p: ReconciliationParameters) throws -> ReconciliationMessage {
        guard bytes.count <= p.maxMessageBytes else {
            throw malformed("\(bytes.count) bytes, more than the limit of \(p.maxMessageBytes)")
        }
        var r = ByteReader(bytes)
        let version = try r.u8("version")
        guard version == Self.version else {
            throw YaOKError(.unsupportedVersion, "Reconciliation message version \(version) is not supported (expected \(Self.version))")
        }
        let kindByte = try r.u8("kind")
        guard let kind = Kind(rawValue: kindByte) else { throw malformed("unknown kind \(kindByte)") }
        let message: ReconciliationMessage
        switch kind {
        case .ranges: message = .ranges(try decodeRanges(&r, p))
        case .haveWant: message = try decodeHaveWant(&r, p)
        }
        guard r.remaining == 0 else { throw malformed("\(r.remaining) bytes after the message") }
        return message
    }

    public static func decode(_ bytes: [UInt8], parameters: ReconciliationParameters) throws -> ReconciliationMessage {
        try decode(bytes[...], parameters: parameters)
    }

    private static func decodeRanges(_ r: inout ByteReader, _ p: ReconciliationParameters) throws -> [ReconciliationRange] {
        let count = try r.varint("range count")
        // The smallest range is 3 bytes (bound code, prefix length, mode).
        guard count <= UInt64(p.maxRanges) else { throw malformed("\(count) ranges, more than the limit of \(p.maxRanges)") }
        guard count <= UInt64(r.remaining / 3) else { throw malformed("\(count) ranges cannot fit in \(r.remaining) bytes") }
        var ranges: [ReconciliationRange] = []
        ranges.reserveCapacity(Int(count))
        var previousExpiry: UInt64 = 0
        var lower = ReconciliationBound.zero
        var idsLeft = p.maxIDs
        for index in 0..<Int(count) {
            let code = try r.varint("bound expiry")
            let expiry: UInt64
            if code == 0 {
                expiry = UInt64.max
            } else {
                let (sum, overflow) = previousExpiry.addingReportingOverflow(code - 1)
                guard !overflow, sum < UInt64.max else { throw malformed("range \(index): expiry past the largest value") }
                expiry = sum
                previousExpiry = sum
            }
            let prefixLength = Int(try r.u8("bound prefix length"))
            guard prefixLength <= p.idLength else {
                throw malformed("range \(index): prefix of \(prefixLength) bytes, longer than an id (\(p.idLength))")
            }
            let prefix = Array(try r.bytes(prefixLength, "bound prefix"))
            guard prefix.last != 0 else { throw malformed("range \(index): prefix ends in a zero byte (not canonical)") }
            guard code != 0 || prefixLength == 0 else { throw malformed("range \(index): infinity with an id prefix") }
            let upper = ReconciliationBound(expiry: expiry, prefix: prefix)
            guard lower < upper else { throw malformed("range \(index): bound \(upper) not above \(lower)") }
            guard upper.isInfinity == (index == Int(count) - 1) else {
                throw malformed(upper.isInfinity ? "range \(index): infinity before the last range" : "the last range does not end at infinity")
            }
            let modeByte = try r.u8("range mode")
            guard let mode = Mode(rawValue: modeByte) else { throw malformed("range \(index): unknown mode \(modeByte)") }
            let payload: ReconciliationRange.Payload
            switch mode {
            case .skip:
                guard index == 0 || ranges[index - 1].payload != .skip else {
                    throw malformed("range \(index): adjacent skips (not coalesced)")
                }
                payload = .skip
            case .fingerprint:
                payload = .fingerprint(Array(try r.bytes(fingerprintLength, "fingerprint")))
            case .idList:
                payload = .idList(try decodeIDs(&r, p, idsLeft: &idsLeft, "range \(index) id list"))
            case .difference:
                let extra = try decodeIDs(&r, p, idsLeft: &idsLeft, "range \(index) extra ids")
                let missing = try decodeIDs(&r, p, idsLeft: &idsLeft, "range \(index) missing ids")
                try requireDisjoint(extra, missing, "range \(index): an id both extra and missing")
                payload = .difference(extra: extra, missing: missing)
            }
            ranges.append(ReconciliationRange(upper: upper, payload: payload))
            lower = upper
        }
        if ranges.count == 1, ranges[0].payload == .skip {
            throw malformed("a single skip (\"settled\" is zero ranges)")
        }
        return ranges
    }

    private static func decodeHaveWant(_ r: inout ByteReader, _ p: ReconciliationParameters) throws -> ReconciliationMessage {
        var idsLeft = p.maxIDs
        let have = try decodeIDs(&r, p, idsLeft: &idsLeft, "have list")
        let want = try decodeIDs(&r, p, idsLeft: &idsLeft, "want list")
        guard !have.isEmpty || !want.isEmpty else { throw malformed("empty have/want lists") }
        try requireDisjoint(have, want, "an id both had and wanted")
        return .haveWant(have: have, want: want)
    }

    /// Both lists ascending: one merge pass finds an id in both.
    private static func requireDisjoint(_ a: [[UInt8]], _ b: [[UInt8]], _ why: String) throws {
        var i = 0, j = 0
        while i < a.count, j < b.count {
            if a[i] == b[j] { throw malformed(why) }
            if a[i].lexicographicallyPrecedes(b[j]) { i += 1 } else { j += 1 }
        }
    }

    /// A count, then that many ids, strictly ascending (so no duplicates).
    private static func decodeIDs(_ r: inout ByteReader, _ p: ReconciliationParameters, idsLeft: inout Int,
                                  _ field: String) throws -> [[UInt8]] {
        let count = try r.varint("\(field) count")
        guard count <= UInt64(idsLeft) else { throw malformed("\(field): \(count) ids, more than the limit of \(p.maxIDs)") }
        guard count <= UInt64(r.remaining / p.idLength) else { throw malformed("\(field): \(count) ids cannot fit in \(r.remaining) bytes") }
        idsLeft -= Int(count)
        var ids: [[UInt8]] = []
        ids.reserveCapacity(Int(count))
        for _ in 0..<Int(count) {
            let id = Array(try r.bytes(p.idLength, field))
            if let last = ids.last, !last.lexicographicallyPrecedes(id) { throw malformed("\(field): ids not strictly ascending") }
            ids.append(id)
        }
        return ids
    }

    static func malformed(_ why: String) -> YaOKError {
        YaOKError(.malformedPacket, "Malformed reconciliation message: \(why)")
    }
}

/// Unsigned base-128 integers, most significant digit first, the high bit set on every
/// byte but the last (as negentropy's); the shortest form only.
extension ByteReader {
    mutating func varint(_ field: String) throws -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<10 {
            let byte = try u8(field)
            if index == 0, byte == 0x80 {
                throw ReconciliationMessage.malformed("\(field): varint with a leading zero digit (not canonical)")
            }
            guard value >> 57 == 0 else { throw ReconciliationMessage.malformed("\(field): varint larger than 64 bits") }
            value = value << 7 | UInt64(byte & 0x7f)
            if byte & 0x80 == 0 { return value }
        }
        throw ReconciliationMessage.malformed("\(field): varint longer than 10 bytes")
    }
}

func varintSize(_ value: UInt64) -> Int {
    var n = 1, v = value >> 7
    while v != 0 { n += 1; v >>= 7 }
    return n
}

extension Array where Element == UInt8 {
    mutating func appendVarint(_ value: UInt64) {
        let n = varintSize(value)
        for i in stride(from: n - 1, through: 0, by: -1) {
            let digit = UInt8(truncatingIfNeeded: value >> (7 * UInt64(i))) & 0x7f
            append(i == 0 ? digit : digit | 0x80)
        }
    }
}
