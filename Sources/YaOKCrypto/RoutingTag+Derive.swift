import YaOKSupport
import YaOKWire

/// Deriving routing tags (docs/PROTOCOL.md §4.3). Separate from RoutingTag.swift because it
/// needs BLAKE2b from libsodium, which the fuzz build does not link.
extension RoutingTag {
    /// BLAKE2b key of the routing tag: domain separation from every other hash in the protocol.
    static let hashKey = Array("YaOK-route-v1".utf8)

    /// tag = BLAKE2b-64(key "YaOK-route-v1", recipient X25519 key (32) || UTC day (u32 BE)).
    ///
    /// What it reveals: anyone who holds the recipient's public key (every contact, anyone
    /// who saw the contact card) can recognise the recipient's packets for any day they
    /// choose. Anyone else sees 8 bytes that link the packets sent to one recipient within
    /// one UTC day and nothing across days. It says nothing about the sender.
    public static func derive(recipientKey: [UInt8], day: UInt32) throws -> RoutingTag {
        guard recipientKey.count == 32 else {
            throw YaOKError(.invalidArgument, "Recipient key must be 32 bytes")
        }
        try Sodium.ensureInitialized()
        var input = recipientKey
        input.appendBigEndian(UInt64(day), count: 4)
        return try RoutingTag(bytes: Sodium.blake2b(input, key: hashKey, outputLength: length))
    }

    /// The tag a packet created at `createdMs` must carry for `recipientKey`.
    public static func derive(recipientKey: [UInt8], createdMs: Int64) throws -> RoutingTag {
        try derive(recipientKey: recipientKey, day: day(ofMs: createdMs))
    }

    /// Whether a routed packet's tag is for `recipientKey` (the recipient's own check, and
    /// a relay's for the contacts it carries mail for).
    public static func matches(_ header: RoutedHeader, recipientKey: [UInt8]) -> Bool {
        (try? derive(recipientKey: recipientKey, createdMs: header.createdMs)) == header.routingTag
    }
}

extension RoutedHeader {
    /// A new routed header for `recipientKey`: the given message ID (a fresh random one by
    /// default), a random first hop limit (HopLimit.initialRange), and the routing tag for
    /// the creation day.
    public static func new(type: PacketType, recipientKey: [UInt8], createdMs: Int64, messageID: MessageID = .random(),
                           lifetimeMinutes: UInt16) throws -> RoutedHeader {
        try RoutedHeader(type: type, hopLimit: HopLimit.initial(), messageID: messageID, createdMs: createdMs,
                         lifetimeMinutes: lifetimeMinutes,
                         routingTag: RoutingTag.derive(recipientKey: recipientKey, createdMs: createdMs))
    }
}
