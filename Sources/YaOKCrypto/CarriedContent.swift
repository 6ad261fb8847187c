import YaOKSupport
import YaOKWire

/// What a carried packet holds inside its seal (docs/PROTOCOL.md §10.4): everything a
/// carrier must not see.
///
///     offset size field
///      0      1   kind: 0x01 message, 0x02 ack
///      1     16   message ID (a message's own; for an ack, the ack's fresh random ID)
///     17      6   created, ms since the Unix epoch (u48)
///     23     16   claim: the preimage of the outer claim hash (§10.6)
///     39      …   message: the text, 1 … 10240 bytes (§3.2)
///                 ack: count (1 … 255) || count × acknowledged message ID (16), as §6.2
public struct CarriedContent: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        case message(text: [UInt8])
        case ack(acknowledged: [MessageID])
    }

    public static let headerLength = 39
    public static let maxLength = headerLength + Envelope.maxBodyLength

    public let kind: Kind
    public let id: MessageID
    public let createdMs: Int64
    public let claim: [UInt8]

    /// `invalidArgument` for a claim that is not 16 bytes or a time outside u48; `emptyMessage`
    /// / `messageTooLarge` for text of 0 or more than 10240 bytes; `invalidArgument` for an
    /// ack of 0 or more than 255 IDs.
    public init(kind: Kind, id: MessageID, createdMs: Int64, claim: [UInt8]) throws {
        guard claim.count == PurgeRecord.claimLength else { throw YaOKError(.invalidArgument, "A claim is 16 bytes") }
        try Envelope.checkTimestamp(createdMs)
        switch kind {
        case .message(let text):
            guard !text.isEmpty else { throw YaOKError(.emptyMessage) }
            guard text.count <= Envelope.maxBodyLength else { throw YaOKError(.messageTooLarge) }
        case .ack(let ids):
            guard (1...DeliveryAck.maxIDs).contains(ids.count) else {
                throw YaOKError(.invalidArgument, "An ack carries 1 to \(DeliveryAck.maxIDs) message IDs")
            }
        }
        self.kind = kind
        self.id = id
        self.createdMs = createdMs
        self.claim = claim
    }

    /// A message with a fresh claim.
    public static func message(_ text: [UInt8], id: MessageID = .random(), createdMs: Int64) throws -> CarriedContent {
        try CarriedContent(kind: .message(text: text), id: id, createdMs: createdMs, claim: PurgeClaim.random())
    }

    /// An ack of `ids` with a fresh ID and claim of its own.
    public static func ack(_ ids: [MessageID], createdMs: Int64) throws -> CarriedContent {
        try CarriedContent(kind: .ack(acknowledged: ids), id: .random(), createdMs: createdMs, claim: PurgeClaim.random())
    }

    func encode() -> [UInt8] {
        var out: [UInt8] = []
        switch kind {
        case .message(let text):
            out.reserveCapacity(Self.headerLength + text.count)
            writeHeader(kind: 0x01, to: &out)
            out += text
        case .ack(let ids):
            writeHeader(kind: 0x02, to: &out)
            out.append(UInt8(ids.count))
            for id in ids { out += id.bytes }
        }
        return out
    }

    private func writeHeader(kind: UInt8, to out: inout [UInt8]) {
        out.append(kind)
        out += id.bytes
        out.appendBigEndian(UInt64(createdMs), count: 6)
        out += claim
    }

    /// Strict (`malformedEnvelope` for anything `encode` does not make): an authentic
    /// sender's bad content is still refused, never half read.
    static func decode(_ bytes: ArraySlice<UInt8>) throws -> CarriedContent {
        func bad(_ why: String) -> YaOKError { YaOKError(.malformedEnvelope, "Carried content: \(why)") }
        guard bytes.count > headerLength else { throw bad("\(bytes.count) bytes, shorter than its header") }
        let s = bytes.startIndex
        let kindByte = bytes[s]
        let id = try MessageID(bytes: bytes[(s + 1)..<(s + 17)])
        let created = bytes[(s + 17)..<(s + 23)].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let claim = Array(bytes[(s + 23)..<(s + 39)])
        let rest = bytes[(s + headerLength)...]
        let kind: Kind
        switch kindByte {
        case 0x01:
            guard rest.count <= Envelope.maxBodyLength else { throw bad("text of \(rest.count) bytes") }
            kind = .message(text: Array(rest))
        case 0x02:
            let count = Int(rest[rest.startIndex])
            guard count >= 1, rest.count == 1 + count * MessageID.length else { throw bad("ack of \(rest.count) bytes") }
            kind = .ack(acknowledged: try (0..<count).map { i in
                let at = rest.startIndex + 1 + i * MessageID.length
                return try MessageID(bytes: rest[at..<(at + MessageID.length)])
            })
        default:
            throw bad("unknown kind 0x\(Hex.encode([kindByte]))")
        }
        return try CarriedContent(kind: kind, id: id, createdMs: created, claim: claim)
    }
}
