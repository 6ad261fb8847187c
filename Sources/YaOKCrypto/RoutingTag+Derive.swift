import YaOKSupport
import YaOKWire

/// Deriving routing tags (docs/PROTOCOL.md §4.3). Separate from RoutingTag.swift because it
/// needs BLAKE2b and X25519 from libsodium, which the fuzz build does not link.
///
/// A tag is computable only by the two contacts it links: it is keyed with a key derived
/// from their static-static X25519 secret, so a card (public keys only) is not enough to
/// compute or recognise one.
extension RoutingTag {
    /// BLAKE2b key of the pair key: domain separation from every other use of the
    /// static-static secret (the envelope's sender MAC, the ack key).
    static let pairKeyKey = Array("YaOK-route-v2".utf8)

    /// tag = BLAKE2b-64(key = pair key; sender X25519 key (32) || recipient X25519 key (32) ||
    /// UTC day (u32 BE)). The order of the keys binds the direction: the tag of Alice → Bob
    /// differs from that of Bob → Alice on the same day.
    public static func derive(route: RoutePair, senderKey: [UInt8], recipientKey: [UInt8], day: UInt32) -> RoutingTag {
        var input = senderKey
        input.reserveCapacity(68)
        input += recipientKey
        input.appendBigEndian(UInt64(day), count: 4)
        let bytes = route.pairKey.withUnsafeBytes { key in
            input.withUnsafeBytes { Sodium.blake2b(parts: [$0], key: key, outputLength: length) }
        }
        // 8 bytes, always: the initializer cannot fail.
        return (try? RoutingTag(bytes: bytes)) ?? RoutingTag(value: 0)
    }
}

/// What one identity shares with one contact for routing (docs/PROTOCOL.md §4.3): both
/// X25519 public keys and the pair key
///
///     pair_key = BLAKE2b-256(key "YaOK-route-v2"; X25519(own secret, peer public))
///
/// which either of the two computes with its own secret (the same value on both sides) and
/// nobody else can. Tags in either direction follow from it. Keep one per contact: the
/// key exchange is the expensive part, a tag is one hash.
public struct RoutePair: Sendable {
    public let ownKey: [UInt8]
    public let peerKey: [UInt8]
    let pairKey: SecureBytes

    /// `invalidArgument` for a key that is not 32 bytes or is of low order (the X25519
    /// output is all zero; no card carries such a key).
    public init(own identity: Identity, peerKey: [UInt8]) throws {
        guard peerKey.count == 32 else { throw YaOKError(.invalidArgument, "X25519 keys are 32 bytes") }
        try Sodium.ensureInitialized()
        guard var shared = try? identity.encryptionSecret.withUnsafeBytes({ try Sodium.x25519(secret: $0, publicKey: peerKey) }) else {
            throw YaOKError(.invalidArgument, "The peer key is of low order")
        }
        defer { Sodium.wipe(&shared) }
        var key = Sodium.blake2b([shared[...]], key: RoutingTag.pairKeyKey, outputLength: 32)
        defer { Sodium.wipe(&key) }
        self.pairKey = try SecureBytes(copying: key)
        self.ownKey = identity.publicIdentity.encryptionKey
        self.peerKey = peerKey
    }

    /// The tag of what we send to the peer on UTC day `day` (messages, and our acks).
    public func outgoingTag(day: UInt32) -> RoutingTag {
        RoutingTag.derive(route: self, senderKey: ownKey, recipientKey: peerKey, day: day)
    }

    /// The tag of what the peer sends us on UTC day `day`.
    public func incomingTag(day: UInt32) -> RoutingTag {
        RoutingTag.derive(route: self, senderKey: peerKey, recipientKey: ownKey, day: day)
    }

    public func outgoingTag(createdMs: Int64) -> RoutingTag { outgoingTag(day: RoutingTag.day(ofMs: createdMs)) }
    public func incomingTag(createdMs: Int64) -> RoutingTag { incomingTag(day: RoutingTag.day(ofMs: createdMs)) }

    /// Whether a routed packet came from the peer to us (its tag for its own creation day).
    public func isIncoming(_ header: RoutedHeader) -> Bool {
        incomingTag(createdMs: header.createdMs) == header.routingTag
    }
}

extension RoutedHeader {
    /// A new routed header from the route's own side to its peer: the given message ID (a
    /// fresh random one by default), a random first hop limit (HopLimit.initialRange), and
    /// the routing tag for the creation day.
    public static func new(type: PacketType, route: RoutePair, createdMs: Int64, messageID: MessageID = .random(),
                           lifetimeMinutes: UInt16) throws -> RoutedHeader {
        try RoutedHeader(type: type, hopLimit: HopLimit.initial(), messageID: messageID, createdMs: createdMs,
                         lifetimeMinutes: lifetimeMinutes, routingTag: route.outgoingTag(createdMs: createdMs))
    }
}
