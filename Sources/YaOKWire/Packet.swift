import YaOKSupport

/// A decoded packet of any type (docs/PROTOCOL.md §4.1). `decode` is strict: it accepts
/// exactly the bytes that `encode` produces, so decode ∘ encode is the identity and
/// encode ∘ decode returns the input unchanged (the fuzzer checks both). Errors:
/// `unsupportedVersion` for a version other than 1, `unknownPacketType` for a type byte
/// not in PacketType, `malformedPacket` for everything else, each with a readable message.
/// Pure Swift (fuzz build).
public enum Packet: Equatable, Sendable {
    /// A message or ack: routed header plus opaque payload (for messages, `Envelope.seal` output).
    case routed(RoutedHeader, payload: [UInt8])
    /// Link-local handshake: version, type, payload length (u16), payload. Not forwarded.
    case handshake(payload: [UInt8])
    case fragment(Fragment)
    /// Link-local encrypted packet: version, type, length (u16), counter (u64), ciphertext
    /// with its tag. The counter is the AEAD nonce, so it travels in clear (and is
    /// authenticated: the 12 header bytes are the AEAD's associated data).
    case link(counter: UInt64, ciphertext: [UInt8])

    public static let handshakeHeaderLength = 4
    /// version, type, length, counter: the link cipher's associated data.
    public static let linkHeaderLength = 12
    /// The shortest ciphertext a link packet can hold: the payload kind byte and the tag.
    public static let minLinkCiphertextLength = 1 + 16

    public var type: PacketType {
        switch self {
        case .routed(let header, _): return header.type
        case .handshake: return .handshake
        case .fragment: return .fragment
        case .link: return .link
        }
    }

    /// The 12 header bytes of a link packet with this counter and ciphertext length: they
    /// are both the packet's prefix and its associated data, so the cipher builds them here,
    /// from the one definition of the layout.
    public static func linkHeader(counter: UInt64, ciphertextLength: Int) throws -> [UInt8] {
        try checkEncodable(ciphertextLength, headerLength: linkHeaderLength)
        guard ciphertextLength >= minLinkCiphertextLength else {
            throw YaOKError(.malformedPacket, "Link ciphertext of \(ciphertextLength) bytes is shorter than its tag and kind")
        }
        var out: [UInt8] = [Wire.version, PacketType.link.rawValue]
        out.reserveCapacity(linkHeaderLength)
        out.appendBigEndian(UInt64(8 + ciphertextLength), count: 2)
        out.appendBigEndian(counter, count: 8)
        return out
    }

    /// Throws `malformedPacket` if the packet would exceed `Wire.maxPacketLength`.
    public func encode() throws -> [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .routed(let header, let payload):
            try Self.checkEncodable(payload.count, headerLength: RoutedHeader.length)
            out.reserveCapacity(RoutedHeader.length + payload.count)
            header.write(payloadLength: payload.count, to: &out)
            out += payload
        case .handshake(let payload):
            try Self.checkEncodable(payload.count, headerLength: Self.handshakeHeaderLength)
            out.reserveCapacity(Self.handshakeHeaderLength + payload.count)
            out.append(Wire.version)
            out.append(PacketType.handshake.rawValue)
            out.appendBigEndian(UInt64(payload.count), count: 2)
            out += payload
        case .fragment(let fragment):
            try Self.checkEncodable(fragment.data.count, headerLength: Fragment.headerLength)
            fragment.write(to: &out)
        case .link(let counter, let ciphertext):
            out = try Self.linkHeader(counter: counter, ciphertextLength: ciphertext.count)
            out += ciphertext
        }
        return out
    }

    private static func checkEncodable(_ payloadLength: Int, headerLength: Int) throws {
        guard payloadLength <= Wire.maxPacketLength - headerLength else {
            throw YaOKError(.malformedPacket, "Payload of \(payloadLength) bytes exceeds the packet limit")
        }
    }

    /// Checks in the order of docs/PROTOCOL.md §4.1: version, type, then everything else
    /// (the packet limit included), so that a future version's packet, however long, is
    /// reported as `unsupportedVersion`.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws -> Packet {
        var r = ByteReader(bytes)
        let type = try readPrefix(&r)
        try checkLength(bytes.count)
        switch type {
        case .message, .ack:
            let header = try RoutedHeader.parseBody(type: type, &r)
            let length = Int(try r.u16("payload length"))
            try RoutedHeader.checkPayloadLength(length, remaining: r.remaining, headerLength: RoutedHeader.length)
            return .routed(header, payload: Array(r.rest()))
        case .handshake:
            let length = Int(try r.u16("payload length"))
            try RoutedHeader.checkPayloadLength(length, remaining: r.remaining, headerLength: handshakeHeaderLength)
            return .handshake(payload: Array(r.rest()))
        case .fragment:
            return .fragment(try Fragment.parseBody(&r))
        case .link:
            let length = Int(try r.u16("link length"))
            // Like a handshake's, the length counts everything after the first 4 bytes.
            try RoutedHeader.checkPayloadLength(length, remaining: r.remaining, headerLength: handshakeHeaderLength)
            guard length >= 8 + minLinkCiphertextLength else {
                throw YaOKError(.malformedPacket, "Malformed packet: link length \(length) is under \(8 + minLinkCiphertextLength)")
            }
            let counter = try r.uint(8, "link counter")
            return .link(counter: counter, ciphertext: Array(r.rest()))
        }
    }

    public static func decode(_ bytes: [UInt8]) throws -> Packet { try decode(bytes[...]) }

    /// What `decode` says first about a packet of `length` bytes that starts with `prefix`
    /// (its first two bytes or fewer): the version, the type, then the length limit, in
    /// §4.1's order. Lets a caller refuse an oversized buffer before copying it.
    public static func checkPrefix(_ prefix: ArraySlice<UInt8>, length: Int) throws {
        var r = ByteReader(prefix)
        _ = try readPrefix(&r)
        try checkLength(length)
    }

    static func checkLength(_ length: Int) throws {
        guard length <= Wire.maxPacketLength else {
            throw YaOKError(.malformedPacket, "Malformed packet: \(length) bytes exceeds the maximum \(Wire.maxPacketLength)")
        }
    }

    /// Version then type: the version is checked first so that a future version's packet is
    /// reported as such, whatever its second byte means there.
    static func readPrefix(_ r: inout ByteReader) throws -> PacketType {
        try readVersion(&r)
        let raw = try r.u8("packet type")
        guard let type = PacketType(rawValue: raw) else {
            throw YaOKError(.unknownPacketType, "Unknown packet type 0x\(Hex.encode([raw]))")
        }
        return type
    }

    /// The version byte every packet and record starts with (§4.1), carried packets and purge
    /// records (§10) included, which decode apart from `Packet`.
    static func readVersion(_ r: inout ByteReader) throws {
        let version = try r.u8("version")
        guard version == Wire.version else {
            throw YaOKError(.unsupportedVersion, "Unsupported protocol version \(version) (this build speaks \(Wire.version))")
        }
    }
}
