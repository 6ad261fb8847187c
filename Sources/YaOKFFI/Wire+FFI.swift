import CYaOK
import YaOK

/* ---- wire (interoperability) ---- */

// Stateless views of the wire format (docs/PROTOCOL.md §4) for a second implementation to
// test against: each entry point calls the same code the node sends and receives with.

@c @implementation
public func yaok_packet_decode(_ packet: UnsafePointer<UInt8>?, _ packetLength: Int,
                               _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    boundary {
        let out = try required(outJSON, "out_json")
        // An oversized buffer is refused from its first two bytes, read in place: copying it
        // first cost its whole size in memory (a 100 MiB buffer, 111 MB peak).
        if packetLength > Wire.maxPacketLength {
            try Packet.checkPrefix(try bytes(packet, 2, "packet")[...], length: packetLength)
        }
        let input = try bytes(packet, packetLength, "packet")
        try give(try Packet.decode(input).json.serialized, to: out)
    }
}

@c @implementation
public func yaok_frame_encode(_ packet: UnsafePointer<UInt8>?, _ packetLength: Int,
                              _ outFrame: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                              _ outFrameLength: UnsafeMutablePointer<Int>?) -> Int32 {
    boundary {
        let out = try required(outFrame, "out_frame")
        let outLength = try required(outFrameLength, "out_frame_len")
        if packetLength > Frame.defaultMaxLength { try Frame.checkLength(packetLength) }  // before copying
        try give(try Frame.encode(try bytes(packet, packetLength, "packet")), to: out, length: outLength)
    }
}

@c @implementation
public func yaok_fragment_split(_ packet: UnsafePointer<UInt8>?, _ packetLength: Int,
                                _ mtu: UInt32, _ firstGroup: UInt16,
                                _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    boundary {
        let out = try required(outJSON, "out_json")
        var fragmenter = try Fragmenter(mtu: Int(mtu), firstGroup: firstGroup)
        if packetLength > Wire.maxPacketLength { try Fragmenter.checkLength(packetLength) }  // before copying
        let input = try bytes(packet, packetLength, "packet")
        try give(JSON.array(try fragmenter.split(input).map { .string(Hex.encode($0)) }).serialized, to: out)
    }
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
