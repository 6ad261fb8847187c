import CYaOK
import YaOK

/* ---- wire (interoperability) ---- */

// Stateless views of the wire format (docs/PROTOCOL.md §4) for a second implementation to
// test against: each entry point calls the same code the node sends and receives with.

@c @implementation
public func yaok_packet_decode(_ packet: UnsafePointer<UInt8>?, _ packetLength: Int,
                               _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    giveString(outJSON, "out_json") { try Packet.decode(try packetBytes(packet, packetLength)).json.serialized }
}

/// The packet argument of yaok_packet_decode. An oversized buffer is refused from its first
/// two bytes, read in place: copying it first cost its whole size in memory (a 100 MiB
/// buffer, 111 MB peak).
private func packetBytes(_ packet: UnsafePointer<UInt8>?, _ packetLength: Int) throws -> [UInt8] {
    if packetLength > Wire.maxPacketLength {
        try Packet.checkPrefix(try bytes(packet, 2, "packet")[...], length: packetLength)
    }
    return try bytes(packet, packetLength, "packet")
}

@c @implementation
public func yaok_frame_encode(_ packet: UnsafePointer<UInt8>?, _ packetLength: Int,
                              _ outFrame: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                              _ outFrameLength: UnsafeMutablePointer<Int>?) -> Int32 {
    giveBytes(outFrame, "out_frame", outFrameLength, "out_frame_len") { try Frame.encode(try frameBytes(packet, packetLength)) }
}

/// The packet argument of yaok_frame_encode, its length checked before it is copied.
private func frameBytes(_ packet: UnsafePointer<UInt8>?, _ packetLength: Int) throws -> [UInt8] {
    if packetLength > Frame.defaultMaxLength { try Frame.checkLength(packetLength) }
    return try bytes(packet, packetLength, "packet")
}

@c @implementation
public func yaok_fragment_split(_ packet: UnsafePointer<UInt8>?, _ packetLength: Int,
                                _ mtu: UInt32, _ firstGroup: UInt16,
                                _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    giveString(outJSON, "out_json") { try fragments(packet, packetLength, mtu, firstGroup) }
}

/// yaok_fragment_split's JSON: the fragments in hex. The MTU is checked first, then the
/// length (before copying the packet).
private func fragments(_ packet: UnsafePointer<UInt8>?, _ packetLength: Int, _ mtu: UInt32, _ firstGroup: UInt16) throws -> String {
    var fragmenter = try Fragmenter(mtu: Int(mtu), firstGroup: firstGroup)
    if packetLength > Wire.maxPacketLength { try Fragmenter.checkLength(packetLength) }
    let input = try bytes(packet, packetLength, "packet")
    return JSON.array(try fragmenter.split(input).map { .string(Hex.encode($0)) }).serialized
}

extension Packet {
    /// The packet as docs/ABI.md's "packet" object: every field of its layout, bytes in
    /// lower-case hex.
    var json: JSON {
        var fields: [(String, JSON)] = [("version", .int(Int64(Wire.version))),
                                        ("type", .string(Self.typeName(type)))]
        switch self {
        case .routed(let header, let payload):
            fields += [("hop_limit", .int(Int64(header.hopLimit))),
                       ("message_id", .string(Hex.encode(header.messageID.bytes))),
                       ("created_ms", .int(header.createdMs)),
                       ("lifetime_min", .int(Int64(header.lifetimeMinutes))),
                       ("expires_ms", .int(header.expiresAtMs)),
                       ("routing_tag", .string(Hex.encode(header.routingTag.bytes))),
                       ("authenticated", .string(Hex.encode(header.authenticatedBytes(payloadLength: payload.count)))),
                       ("payload", .string(Hex.encode(payload)))]
        case .handshake(let payload):
            fields.append(("payload", .string(Hex.encode(payload))))
        case .fragment(let fragment):
            fields += [("group", .int(Int64(fragment.group))), ("index", .int(Int64(fragment.index))),
                       ("count", .int(Int64(fragment.count))), ("data", .string(Hex.encode(fragment.data)))]
        case .link(let counter, let ciphertext):
            var counterBytes: [UInt8] = []
            counterBytes.appendBigEndian(counter, count: 8)
            fields += [("counter", .string(Hex.encode(counterBytes))), ("ciphertext", .string(Hex.encode(ciphertext)))]
        }
        return .object(fields)
    }

    private static func typeName(_ type: PacketType) -> String {
        switch type {
        case .message: return "message"
        case .ack: return "ack"
        case .handshake: return "handshake"
        case .fragment: return "fragment"
        case .link: return "link"
        }
    }
}
