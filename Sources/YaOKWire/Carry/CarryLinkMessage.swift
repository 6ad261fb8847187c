import YaOKSupport

/// The link payloads of a meeting (docs/PROTOCOL.md §12): what two nodes say on a link to
/// reconcile their carry stores and hand carried packets over. Each is one link payload
/// (§5.4), `kind || body`; this type holds the body of the carry kinds, decoded strictly.
/// A body that does not fit its kind is `malformedPacket`: the receiver drops that payload
/// and keeps the link, as for every other kind. Pure Swift (fuzz build).
public enum CarryLinkMessage: Equatable, Sendable {
    /// 0x06: one reconciliation message (§11), opaque here: the `Reconciler` decodes it.
    case reconcile([UInt8])
    /// 0x07: packets the sender holds and the receiver lacks, as their outside shows them
    /// (identity, tag, budget, claim hash).
    case offer([CarryOffer])
    /// 0x08: packets of an offer the sender wants handed over, in the order wanted.
    case request([[UInt8]])
    /// 0x09: one carried packet (§10.2) handed over, with the budget and hop limit given.
    case carried(CarriedPacket)
    /// 0x0A: packets the sender has durably taken (or held already, or knows purged): the
    /// giver keeps what it did not give and stops offering them on this link.
    case taken([[UInt8]])
    /// 0x0B: one purge record (§10.6).
    case purge(PurgeRecord)
    /// 0x0C: packets handed over and not taken (store full, over quota, expired): the giver
    /// keeps its budget and stops offering them on this link.
    case refused([[UInt8]])

    public enum Kind: UInt8, Sendable, CaseIterable {
        case reconcile = 0x06
        case offer = 0x07
        case request = 0x08
        case carried = 0x09
        case taken = 0x0A
        case purge = 0x0B
        case refused = 0x0C
    }

    /// Packet identities are 16 bytes (§10.2).
    public static let identityLength = 16
    /// An offer entry: identity, carried routing tag, copy budget, claim hash.
    public static let offerEntryLength = identityLength + RoutingTag.length + 1 + CarriedPacket.claimHashLength
    /// At most 255 entries per offer, request, taken or refused list (the count is a byte).
    public static let maxEntries = 255
    /// A reconciliation message is at most 16 KiB (§11's message limit).
    public static let maxReconcileLength = 16 * 1024

    public var kind: Kind {
        switch self {
        case .reconcile: return .reconcile
        case .offer: return .offer
        case .request: return .request
        case .carried: return .carried
        case .taken: return .taken
        case .purge: return .purge
        case .refused: return .refused
        }
    }

    /// The body (without the kind byte). `invalidArgument` for what the receiver would
    /// refuse (an empty or over-long list, a duplicate, an identity of another length), so a
    /// node never spends a link counter on it.
    public func encodeBody() throws -> [UInt8] {
        switch self {
        case .reconcile(let bytes):
            guard (1...Self.maxReconcileLength).contains(bytes.count) else {
                throw YaOKError(.invalidArgument, "A reconciliation message is 1 to \(Self.maxReconcileLength) bytes")
            }
            return bytes
        case .offer(let entries):
            try Self.checkCount(entries.count)
            try Self.checkDistinct(entries.map(\.identity))
            guard entries.allSatisfy({ $0.claimHash.count == CarriedPacket.claimHashLength }) else {
                throw YaOKError(.invalidArgument, "A claim hash is \(CarriedPacket.claimHashLength) bytes")
            }
            var out: [UInt8] = [UInt8(entries.count)]
            out.reserveCapacity(1 + entries.count * Self.offerEntryLength)
            for e in entries {
                out += e.identity
                out.appendBigEndian(e.routingTag.value, count: RoutingTag.length)
                out.append(e.copyBudget)
                out += e.claimHash
            }
            return out
        case .request(let ids), .taken(let ids), .refused(let ids):
            try Self.checkCount(ids.count)
            try Self.checkDistinct(ids)
            var out: [UInt8] = [UInt8(ids.count)]
            out.reserveCapacity(1 + ids.count * Self.identityLength)
            for id in ids { out += id }
            return out
        case .carried(let packet):
            return packet.encode()
        case .purge(let record):
            return record.encode()
        }
    }

    /// Strict: exactly what `encodeBody` makes. `malformedPacket` for an empty or over-long
    /// reconciliation message; a list whose count is 0 or whose length is not `1 + count ×
    /// entry`; a repeated identity; an offer entry with budget 0; a carried packet or purge
    /// record its own decoder refuses (any status of theirs becomes `malformedPacket`: the
    /// body does not match the kind). Lengths are checked before anything is copied.
    public static func decode(kind: Kind, body: ArraySlice<UInt8>) throws -> CarryLinkMessage {
        switch kind {
        case .reconcile:
            guard (1...maxReconcileLength).contains(body.count) else {
                throw malformed("a reconciliation message of \(body.count) bytes")
            }
            return .reconcile(Array(body))
        case .offer:
            var r = ByteReader(body)
            let count = try listCount(&r, entryLength: offerEntryLength)
            var entries: [CarryOffer] = []
            entries.reserveCapacity(count)
            for _ in 0..<count {
                let id = Array(try r.bytes(identityLength, "identity"))
                let tag = RoutingTag(value: try r.uint(RoutingTag.length, "routing tag"))
                let budget = try r.u8("copy budget")
                guard budget >= 1 else { throw malformed("an offer of a packet with copy budget 0") }
                let claimHash = Array(try r.bytes(CarriedPacket.claimHashLength, "claim hash"))
                entries.append(CarryOffer(identity: id, routingTag: tag, copyBudget: budget, claimHash: claimHash))
            }
            try requireDistinct(entries.map(\.identity))
            return .offer(entries)
        case .request, .taken, .refused:
            var r = ByteReader(body)
            let count = try listCount(&r, entryLength: identityLength)
            var ids: [[UInt8]] = []
            ids.reserveCapacity(count)
            for _ in 0..<count { ids.append(Array(try r.bytes(identityLength, "identity"))) }
            try requireDistinct(ids)
            switch kind {
            case .request: return .request(ids)
            case .taken: return .taken(ids)
            default: return .refused(ids)
            }
        case .carried:
            do {
                return .carried(try CarriedPacket.decode(body))
            } catch let error as YaOKError {
                throw malformed("not a carried packet (\(error.code))")
            }
        case .purge:
            do {
                return .purge(try PurgeRecord.decode(body))
            } catch let error as YaOKError {
                throw malformed("not a purge record (\(error.code))")
            }
        }
    }

    private static func listCount(_ r: inout ByteReader, entryLength: Int) throws -> Int {
        let count = Int(try r.u8("count"))
        guard count >= 1 else { throw malformed("an empty list") }
        guard r.remaining == count * entryLength else {
            throw malformed("\(count) entries need \(count * entryLength) bytes, \(r.remaining) follow")
        }
        return count
    }

    private static func requireDistinct(_ ids: [[UInt8]]) throws {
        guard Set(ids).count == ids.count else { throw malformed("a packet listed twice") }
    }

    private static func checkCount(_ count: Int) throws {
        guard (1...maxEntries).contains(count) else {
            throw YaOKError(.invalidArgument, "A carry list holds 1 to \(maxEntries) entries, got \(count)")
        }
    }

    private static func checkDistinct(_ ids: [[UInt8]]) throws {
        guard ids.allSatisfy({ $0.count == identityLength }) else {
            throw YaOKError(.invalidArgument, "A packet identity is \(identityLength) bytes")
        }
        guard Set(ids).count == ids.count else { throw YaOKError(.invalidArgument, "A packet listed twice") }
    }

    static func malformed(_ why: String) -> YaOKError {
        YaOKError(.malformedPacket, "Malformed carry payload: \(why)")
    }
}

/// One entry of an offer: what the receiver needs to decide whether to ask for the packet
/// without seeing it. The routing tag lets a recipient recognise its mail locally (it never
/// reveals its own tags); the budget says whether the packet may still spread (≥ 2) or
/// waits for its recipient (1); the claim hash lets a receiver that knows the packet was
/// delivered answer with its claim (a purge aimed at exactly the holders of the packet).
public struct CarryOffer: Equatable, Sendable {
    public let identity: [UInt8]
    public let routingTag: RoutingTag
    public let copyBudget: UInt8
    public let claimHash: [UInt8]

    public init(identity: [UInt8], routingTag: RoutingTag, copyBudget: UInt8, claimHash: [UInt8]) {
        self.identity = identity
        self.routingTag = routingTag
        self.copyBudget = copyBudget
        self.claimHash = claimHash
    }
}
