import YaOKWire

/// What a session was sent (issue 17 §2): the (mailbox, message ID) of its last
/// `capacity` DELIVERs, as 64-bit keyed hashes (Swift's `Hasher` is SipHash with a key
/// drawn per process, so a client cannot aim a made-up ref at a collision). A DELETE
/// names only refs of its own session (§8.5); refs not in here are ignored without
/// touching the store, so made-up IDs cost the relay no disk work. Bounded: past
/// `capacity` the oldest are forgotten (that packet is then not deleted in this session
/// and is delivered again in the next, where it is deleted).
struct DeliveredRefs {
    static let capacity = 16_384
    private var hashes = Set<UInt64>()
    private var ring: [UInt64] = []
    private var next = 0

    var count: Int { hashes.count }

    private static func key(_ mailbox: MailboxID, _ messageID: MessageID) -> UInt64 {
        var h = Hasher()
        h.combine(mailbox)
        h.combine(messageID)
        return UInt64(bitPattern: Int64(h.finalize()))
    }

    /// Notes a DELIVER of `packet` from `mailbox` (a packet without a routed header has
    /// no ID a client could name).
    mutating func note(_ mailbox: MailboxID, packet: [UInt8]) {
        guard let (header, _) = try? RoutedHeader.parse(packet) else { return }
        let k = Self.key(mailbox, header.messageID)
        guard hashes.insert(k).inserted else { return }
        if ring.count < Self.capacity {
            ring.append(k)
        } else {
            hashes.remove(ring[next])
            ring[next] = k
            next = (next + 1) % Self.capacity
        }
    }

    /// Takes `ref` out if it was delivered (a ref is deleted once).
    mutating func take(_ ref: StoredPacketRef) -> Bool {
        hashes.remove(Self.key(ref.mailbox, ref.messageID)) != nil
    }
}
