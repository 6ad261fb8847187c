import YaOKSupport

/// A packet carried through strangers (docs/PROTOCOL.md §10): only what a carrier needs is
/// outside the seal.
///
///     offset size field
///      0      1   version (1)
///      1      1   type (0x06, carried)
///      2      1   hop limit      ← changed by carriers: not authenticated
///      3      1   copy budget    ← changed by carriers: not authenticated
///      4      4   expiry, whole hours since the Unix epoch (u32)
///      8      8   carried routing tag of the pair, for the UTC day of the expiry
///     16     16   claim hash (the purge, §10.6)
///     32      2   payload length
///     34      …   payload: the carried envelope (§10.4)
///
/// The message ID, the creation time, the kind (message or ack) and the claim are inside
/// the seal. The expiry is in hours, not minutes or milliseconds, so that it does not pin
/// the creation time: every packet sealed in the same hour with the same lifetime shows
/// the same value. Pure Swift (fuzz build): the packet identity, the tag and the seal need
/// BLAKE2b and live in YaOKCrypto.
public struct CarriedPacket: Equatable, Sendable {
    /// The type byte (§4.1). Not a `PacketType`: a carried packet is not a link unit, and
    /// `Packet.decode` (the link-unit decoder) answers `unknownPacketType` for it.
    public static let type: UInt8 = 0x06
    public static let headerLength = 34
    /// Version, type, expiry, tag, claim hash, payload length: header without its two
    /// carrier-changed bytes.
    public static let authenticatedHeaderLength = headerLength - 2
    public static let claimHashLength = 16
    public static let hourMs: Int64 = 3_600_000
    /// 14 days: the longest lifetime a sender may give.
    public static let maxLifetimeMs: Int64 = 14 * 86_400_000
    /// How far an expiry may lie beyond now: the longest lifetime, the rounding up to the
    /// next whole hour, and the clock skew a packet's creation time may have (§4.2).
    public static let maxExpiryAheadMs: Int64 = maxLifetimeMs + hourMs + HopLimit.defaultMaxClockSkewMs
    /// The largest payload: the carried envelope of the longest content in the largest bucket.
    public static let maxPayloadLength = Wire.maxPacketLength - headerLength

    /// Carriers change the hop limit and the budget (`handOver`); the budget, the claim hash
    /// and the payload are set only through the initialiser and `handOver` outside this
    /// module, so that nothing unencodable (a budget of 0, a claim hash of another length,
    /// a payload over the limit) can be built.
    public var hopLimit: UInt8
    public internal(set) var copyBudget: UInt8
    public var expiryHour: UInt32
    public var routingTag: RoutingTag
    public internal(set) var claimHash: [UInt8]
    public internal(set) var payload: [UInt8]

    /// `invalidArgument` for a copy budget of 0 (a packet nobody may hold), a claim hash
    /// that is not 16 bytes, or a payload over the limit: nothing unencodable can be built.
    public init(hopLimit: UInt8, copyBudget: UInt8, expiryHour: UInt32, routingTag: RoutingTag,
                claimHash: [UInt8], payload: [UInt8]) throws {
        guard copyBudget >= 1 else { throw YaOKError(.invalidArgument, "A carried packet's copy budget is at least 1") }
        guard claimHash.count == Self.claimHashLength else {
            throw YaOKError(.invalidArgument, "A claim hash is \(Self.claimHashLength) bytes, got \(claimHash.count)")
        }
        guard payload.count <= Self.maxPayloadLength else {
            throw YaOKError(.invalidArgument, "Payload of \(payload.count) bytes exceeds the carried packet limit")
        }
        self.hopLimit = hopLimit
        self.copyBudget = copyBudget
        self.expiryHour = expiryHour
        self.routingTag = routingTag
        self.claimHash = claimHash
        self.payload = payload
    }

    /// The first instant (ms) at which the packet is expired and dropped everywhere.
    public var expiresAtMs: Int64 { Int64(expiryHour) * Self.hourMs }

    /// The UTC day the routing tag is made for: the day of the expiry (§10.3), which the
    /// recipient reads off the packet, so it tries one epoch per contact.
    public var epoch: UInt32 { expiryHour / 24 }

    /// The expiry hour of a packet created at `createdMs` that lives `lifetimeMs`: rounded up
    /// to a whole hour, so that a packet never lives shorter than asked.
    public static func expiryHour(createdMs: Int64, lifetimeMs: Int64) throws -> UInt32 {
        guard createdMs >= 0, (1...maxLifetimeMs).contains(lifetimeMs) else {
            throw YaOKError(.invalidArgument, "A carried packet lives 1 ms to 14 days, from a time after 1970")
        }
        let end = createdMs + lifetimeMs
        let hours = end / hourMs + (end % hourMs == 0 ? 0 : 1)
        guard let hour = UInt32(exactly: hours) else { throw YaOKError(.invalidArgument, "Expiry beyond the year 2459") }
        return hour
    }

    public func encode() -> [UInt8] {
        var out: [UInt8] = [Wire.version, Self.type, hopLimit, copyBudget]
        out.reserveCapacity(Self.headerLength + payload.count)
        writeAuthenticatedTail(to: &out)
        out += payload
        return out
    }

    /// The bytes the seal authenticates (the carried envelope's `header_ad`): the header
    /// without hop limit and copy budget, 32 bytes. Carriers rewrite those two; anything
    /// else a carrier changes fails the recipient's open.
    public var authenticatedHeader: [UInt8] {
        var out: [UInt8] = [Wire.version, Self.type]
        out.reserveCapacity(Self.authenticatedHeaderLength)
        writeAuthenticatedTail(to: &out)
        return out
    }

    /// The authenticated header of a packet with these fields and a payload of
    /// `payloadLength` bytes, before the payload exists (the seal binds it).
    public static func authenticatedHeader(expiryHour: UInt32, routingTag: RoutingTag, claimHash: [UInt8],
                                           payloadLength: Int) throws -> [UInt8] {
        try CarriedPacket(hopLimit: 0, copyBudget: 1, expiryHour: expiryHour, routingTag: routingTag, claimHash: claimHash,
                          payload: [UInt8](repeating: 0, count: payloadLength)).authenticatedHeader
    }

    private func writeAuthenticatedTail(to out: inout [UInt8]) {
        out.appendBigEndian(UInt64(expiryHour), count: 4)
        out.appendBigEndian(routingTag.value, count: 8)
        out += claimHash
        out.appendBigEndian(UInt64(payload.count), count: 2)
    }

    /// Strict: accepts exactly what `encode` makes. In §4.1's order: version
    /// (`unsupportedVersion`), type (`unknownPacketType` for anything but 0x06), then
    /// `malformedPacket` for a packet over 17408 bytes, a field cut short, a copy budget of
    /// 0, a payload length that differs from the bytes that follow. Time is not checked
    /// here (`checkTime`).
    public static func decode(_ bytes: ArraySlice<UInt8>) throws -> CarriedPacket {
        var r = ByteReader(bytes)
        try Packet.readVersion(&r)
        let type = try r.u8("packet type")
        guard type == Self.type else {
            throw YaOKError(.unknownPacketType, "Packet type 0x\(Hex.encode([type])) is not a carried packet")
        }
        try Packet.checkLength(bytes.count)
        let hop = try r.u8("hop limit")
        let budget = try r.u8("copy budget")
        guard budget >= 1 else { throw YaOKError(.malformedPacket, "Malformed packet: copy budget 0") }
        let expiry = UInt32(try r.uint(4, "expiry"))
        let tag = RoutingTag(value: try r.uint(8, "routing tag"))
        let claimHash = Array(try r.bytes(claimHashLength, "claim hash"))
        let length = Int(try r.u16("payload length"))
        try RoutedHeader.checkPayloadLength(length, remaining: r.remaining, headerLength: headerLength)
        return try CarriedPacket(hopLimit: hop, copyBudget: budget, expiryHour: expiry, routingTag: tag,
                                 claimHash: claimHash, payload: Array(r.rest()))
    }

    public static func decode(_ bytes: [UInt8]) throws -> CarriedPacket { try decode(bytes[...]) }

    /// Decodes and checks the time: what a carrier runs on every packet it is offered.
    public static func decode(_ bytes: [UInt8], nowMs: Int64) throws -> CarriedPacket {
        let packet = try decode(bytes)
        try packet.checkTime(nowMs: nowMs)
        return packet
    }

    /// `expired` once `now ≥ expiry` (dropped everywhere, carried no further);
    /// `malformedPacket` for an expiry more than 14 days + 1 h + 15 min ahead (a lifetime
    /// over the limit, which would pin a packet in every store for longer).
    public func checkTime(nowMs: Int64) throws {
        guard nowMs < expiresAtMs else { throw YaOKError(.expired, "Carried packet expired") }
        guard expiresAtMs - nowMs <= Self.maxExpiryAheadMs else {
            throw YaOKError(.malformedPacket,
                            "Malformed packet: expiry \(expiresAtMs - nowMs) ms ahead, over the 14-day lifetime limit")
        }
    }
}
