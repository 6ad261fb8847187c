import YaOKSupport

/// The header of a routed packet (message or ack), docs/PROTOCOL.md §4.2:
///
///     offset size field
///      0      1   version (1)
///      1      1   type (0x01 message, 0x02 ack)
///      2      1   hop limit           ← the only field forwarders change; not authenticated
///      3     16   message ID
///     19      6   created, ms since the Unix epoch (UTC), u48
///     25      2   lifetime, minutes (≥ 1)
///     27      8   routing tag
///     35      2   payload length
///     37      …   payload
///
/// Fixed size, fixed offsets: a relay parses it with a handful of loads (the benchmark
/// target is ≥ 1,000,000 parses/s) and rewrites the hop limit in place. Pure Swift (fuzz build).
public struct RoutedHeader: Equatable, Sendable {
    public static let length = 37
    static let hopLimitOffset = 2
    /// 2^48 ms is about the year 10889: six bytes are enough and save two per packet.
    public static let maxCreatedMs: Int64 = (1 << 48) - 1
    static let minuteMs: Int64 = 60_000

    public var type: PacketType
    public var hopLimit: UInt8
    public var messageID: MessageID
    public var createdMs: Int64
    public var lifetimeMinutes: UInt16
    public var routingTag: RoutingTag

    /// Throws `invalidArgument` for a type that is not routed, a zero lifetime, or a time
    /// that does not fit 48 bits, so that nothing unencodable can be built.
    public init(type: PacketType, hopLimit: UInt8, messageID: MessageID, createdMs: Int64,
                lifetimeMinutes: UInt16, routingTag: RoutingTag) throws {
        guard type.isRouted else { throw YaOKError(.invalidArgument, "Packet type \(type) has no routed header") }
        guard lifetimeMinutes >= 1 else { throw YaOKError(.invalidArgument, "Lifetime must be at least 1 minute") }
        guard (0...Self.maxCreatedMs).contains(createdMs) else { throw YaOKError(.invalidArgument, "Creation time must be 0 to 2^48-1 ms") }
        self.type = type
        self.hopLimit = hopLimit
        self.messageID = messageID
        self.createdMs = createdMs
        self.lifetimeMinutes = lifetimeMinutes
        self.routingTag = routingTag
    }

    /// The first instant (ms) at which the packet is expired and must be dropped.
    public var expiresAtMs: Int64 { createdMs + Int64(lifetimeMinutes) * Self.minuteMs }

    /// Appends the header for a payload of `payloadLength` bytes.
    func write(payloadLength: Int, to out: inout [UInt8]) {
        out.append(Wire.version)
        out.append(type.rawValue)
        out.append(hopLimit)
        writeAuthenticatedTail(payloadLength: payloadLength, to: &out)
    }

    /// Everything after the hop limit, up to and including the payload length.
    private func writeAuthenticatedTail(payloadLength: Int, to out: inout [UInt8]) {
        out.appendBigEndian(messageID.high, count: 8)
        out.appendBigEndian(messageID.low, count: 8)
        out.appendBigEndian(UInt64(createdMs), count: 6)
        out.appendBigEndian(UInt64(lifetimeMinutes), count: 2)
        out.appendBigEndian(routingTag.value, count: 8)
        out.appendBigEndian(UInt64(payloadLength), count: 2)
    }

    /// The header bytes that the end-to-end crypto must authenticate: the encoded header
    /// without its hop limit (36 bytes: version, type, then offsets 3..<37). Forwarders
    /// rewrite the hop limit, so it cannot be covered; everything else a forwarder could
    /// alter (ID, times, tag, length) is. The payload length is the sealed envelope's length,
    /// known before sealing (`Envelope.overhead` + the padding bucket).
    public func authenticatedBytes(payloadLength: Int) -> [UInt8] {
        var out: [UInt8] = [Wire.version, type.rawValue]
        out.reserveCapacity(Self.length - 1)
        writeAuthenticatedTail(payloadLength: payloadLength, to: &out)
        return out
    }

    /// Parses the header at the start of `bytes` and returns it with the payload's range in
    /// `bytes`. Strict: the payload length must equal exactly what follows the header, and
    /// must not exceed the packet limit. The payload itself is not copied.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws -> (header: RoutedHeader, payload: Range<Int>) {
        var r = ByteReader(bytes)
        let type = try Packet.readPrefix(&r)
        guard type.isRouted else {
            throw YaOKError(.malformedPacket, "Malformed packet: type \(type) has no routed header")
        }
        let header = try parseBody(type: type, &r)
        let payloadLength = Int(try r.u16("payload length"))
        try checkPayloadLength(payloadLength, remaining: r.remaining, headerLength: Self.length)
        let start = r.offset
        return (header, start..<start + payloadLength)
    }

    public static func parse(_ bytes: [UInt8]) throws -> (header: RoutedHeader, payload: Range<Int>) {
        try parse(bytes[...])
    }

    /// Reads hop limit … routing tag, after the version and type.
    static func parseBody(type: PacketType, _ r: inout ByteReader) throws -> RoutedHeader {
        let hop = try r.u8("hop limit")
        let high = try r.uint(8, "message ID")
        let low = try r.uint(8, "message ID")
        let created = try r.uint(6, "creation time")
        let lifetime = try r.u16("lifetime")
        guard lifetime >= 1 else { throw YaOKError(.malformedPacket, "Malformed packet: lifetime is 0 minutes") }
        let tag = try r.uint(8, "routing tag")
        // Cannot fail: every field was range-checked above, and the initialiser checks the same.
        return try RoutedHeader(type: type, hopLimit: hop, messageID: MessageID(high: high, low: low),
                                createdMs: Int64(created), lifetimeMinutes: lifetime, routingTag: RoutingTag(value: tag))
    }

    /// The length field must describe exactly the bytes that follow, within the packet limit.
    static func checkPayloadLength(_ length: Int, remaining: Int, headerLength: Int) throws {
        let max = Wire.maxPacketLength - headerLength
        guard length <= max else {
            throw YaOKError(.malformedPacket, "Malformed packet: payload length \(length) exceeds the maximum \(max)")
        }
        guard length == remaining else {
            throw YaOKError(.malformedPacket,
                            "Malformed packet: payload length \(length) but \(remaining) bytes follow the header")
        }
    }

    /// Rejects a packet outside its validity window with `expired`: expired, or claiming a
    /// creation time more than `maxSkewMs` ahead of `nowMs` (the message says which; both
    /// mean "drop, no ack"). Dropping future packets matters for
    /// duplicate detection: an ID is remembered until its packet expires, so a far-future
    /// creation time would otherwise pin it in storage for years.
    public func checkTime(nowMs: Int64, maxSkewMs: Int64 = HopLimit.defaultMaxClockSkewMs) throws {
        guard nowMs < expiresAtMs else { throw YaOKError(.expired) }
        // Written as a difference so that no sum can overflow.
        guard createdMs <= nowMs || createdMs - nowMs <= maxSkewMs else {
            throw YaOKError(.expired, "Packet is not valid yet: created \(createdMs - nowMs) ms in the future (allowed \(maxSkewMs))")
        }
    }
}
