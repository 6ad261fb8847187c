import YaOKSupport
import YaOKWire

/// What one link packet carries (docs/PROTOCOL.md §5.4): `kind (u8) || body`.
public enum LinkPayload: Equatable, Sendable {
    /// One encoded routed packet (message or ack), which the receiver decodes and handles
    /// like any routed packet. 1 to `maxCarriedPacketLength` bytes.
    case packet([UInt8])
    /// "I have durably taken these packets": a per-hop receipt, 1 to 255 message IDs.
    case receipt([MessageID])
    /// Proves the peer alive; a responder sends one on completing, so that the initiator
    /// learns its m3 arrived.
    case keepalive
    /// Contact recognition (docs/PROTOCOL.md §5.9): a probe's 1024-byte filter, a proof's
    /// 32-byte MAC, checked for shape on decoding (`ContactRecognition` makes and checks them).
    case contactProbe(ContactProbeBody)
    case contactProof(ContactProofBody)
    /// A meeting's payload (0x06 to 0x0C, docs/PROTOCOL.md §12): reconciliation, offers,
    /// requests, carried packets, taken/refused lists, purge records.
    case carry(CarryLinkMessage)

    public enum Kind: UInt8, Sendable, CaseIterable {
        case packet = 0x01
        case receipt = 0x02
        case keepalive = 0x03
        case contactProbe = 0x04
        case contactProof = 0x05
        case carry = 0x06  // 0x06 to 0x0C: the carry kinds (CarryLinkMessage.Kind)
    }

    /// A link packet is a packet (at most `Wire.maxPacketLength`), so its kind byte and
    /// body must fit beside the 12-byte header and the 16-byte tag.
    public static let maxPlaintextLength = Wire.maxPacketLength - Packet.linkHeaderLength - Sodium.chacha20Poly1305TagLength
    public static let maxCarriedPacketLength = maxPlaintextLength - 1
    public static let maxReceiptCount = 255

    public var kind: Kind {
        switch self {
        case .packet: return .packet
        case .receipt: return .receipt
        case .keepalive: return .keepalive
        case .contactProbe: return .contactProbe
        case .contactProof: return .contactProof
        case .carry: return .carry
        }
    }

    /// The plaintext. A payload the receiver would refuse is refused here (`invalidArgument`),
    /// so that a node never spends a counter on it.
    func encode() throws -> [UInt8] {
        switch self {
        case .packet(let packet):
            guard (1...Self.maxCarriedPacketLength).contains(packet.count) else {
                throw YaOKError(.invalidArgument, "A carried packet is 1 to \(Self.maxCarriedPacketLength) bytes, got \(packet.count)")
            }
            return [Kind.packet.rawValue] + packet
        case .receipt(let ids):
            guard (1...Self.maxReceiptCount).contains(ids.count) else {
                throw YaOKError(.invalidArgument, "A receipt names 1 to \(Self.maxReceiptCount) packets, got \(ids.count)")
            }
            var out: [UInt8] = [Kind.receipt.rawValue, UInt8(ids.count)]
            out.reserveCapacity(2 + MessageID.length * ids.count)
            for id in ids { out += id.bytes }
            return out
        case .keepalive:
            return [Kind.keepalive.rawValue]
        case .contactProbe(let probe):
            return [Kind.contactProbe.rawValue] + probe.bytes
        case .contactProof(let proof):
            return [Kind.contactProof.rawValue] + proof.mac
        case .carry(let message):
            let body = try message.encodeBody()
            guard body.count < Self.maxPlaintextLength else {
                throw YaOKError(.invalidArgument, "A carry payload of \(body.count) bytes does not fit a link packet")
            }
            return [message.kind.rawValue] + body
        }
    }

    /// An authentic plaintext whose body does not fit its kind → `malformedPacket`; an
    /// unknown kind → `unknownPacketType`. Either way the caller drops this packet only and
    /// keeps the link: a later version may add kinds.
    static func decode(_ plaintext: [UInt8]) throws -> LinkPayload {
        guard let raw = plaintext.first else {
            throw YaOKError(.malformedPacket, "Empty link plaintext")
        }
        if let carry = CarryLinkMessage.Kind(rawValue: raw) {
            return .carry(try CarryLinkMessage.decode(kind: carry, body: plaintext.dropFirst()))
        }
        guard let kind = Kind(rawValue: raw) else {
            throw YaOKError(.unknownPacketType, "Unknown link payload kind 0x\(Hex.encode([raw]))")
        }
        let body = plaintext.dropFirst()
        switch kind {
        case .packet:
            guard !body.isEmpty else { throw YaOKError(.malformedPacket, "Empty carried packet") }
            return .packet(Array(body))
        case .receipt:
            guard let count = body.first, count > 0, body.count == 1 + MessageID.length * Int(count) else {
                throw YaOKError(.malformedPacket, "A receipt's length does not match its count")
            }
            var ids: [MessageID] = []
            ids.reserveCapacity(Int(count))
            var start = body.startIndex + 1
            while start < body.endIndex {
                ids.append(try MessageID(bytes: body[start..<start + MessageID.length]))
                start += MessageID.length
            }
            return .receipt(ids)
        case .keepalive:
            guard body.isEmpty else { throw YaOKError(.malformedPacket, "A keepalive has no body") }
            return .keepalive
        case .contactProbe:
            return .contactProbe(try ContactProbeBody(decoding: body))
        case .contactProof:
            return .contactProof(try ContactProofBody(decoding: body))
        case .carry:
            throw YaOKError(.internal, "Carry kinds are decoded above")
        }
    }
}
