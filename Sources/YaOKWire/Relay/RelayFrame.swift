import YaOKSupport

/// The frames of the relay protocol (docs/PROTOCOL.md §8.3), shared by the relay server
/// and the relay client transport. Each is one stream frame's payload (§4.6) inside TLS.
/// Pure Swift (fuzz build): decoding untrusted bytes checks every length first and throws
/// `malformedPacket` naming the field.
public enum RelayFrame: Equatable, Sendable {
    // Client → relay.
    case auth(pseudonym: [UInt8], signature: [UInt8])
    case subscribe([MailboxProof])
    /// `signature`: the mailbox key's signature of the packet (`RelaySignedData.post`), the
    /// proof that the poster may post there.
    case post(request: UInt32, mailbox: MailboxID, signature: [UInt8], packet: [UInt8])
    case delete([StoredPacketRef])
    case ping(request: UInt32)
    /// CARRY (both directions, §12.9): one meeting payload of §12.2 (kind and body), the
    /// relay being one more carrier. Client → relay is type 0x06, relay → client 0x87.
    case carry(CarryLinkMessage)
    // Relay → client.
    /// `relay`: the relay's identifier (§8.2), shared by every relay of a cluster.
    case challenge(nonce: [UInt8], relay: [UInt8])
    case ready(sessionLifetimeSeconds: UInt32, ratePerHour: UInt32, remaining: UInt32)
    case subscribed(count: UInt16)
    case accepted(request: UInt32)
    case deliver(mailbox: MailboxID, packet: [UInt8])
    case pong(request: UInt32)
    case error(RelayErrorFrame)
    case carryFromRelay(CarryLinkMessage)

    public static let version: UInt8 = 1
    /// The longest frame either side accepts: a maximal packet and the fields around it.
    public static let maxLength = 17_536
    /// Every SUBSCRIBE frame has room for this many proofs, unused ones zero (§8.4: its size
    /// does not tell how many contacts a node has).
    public static let maxSubscribePerFrame = 64
    public static let maxDeletePerFrame = 256
    /// The numbers of refs a DELETE frame has room for (unused ones zero): its size tells only
    /// the bucket of the number it deletes (§8.4).
    public static let deleteBuckets = [16, 64, 256]
    public static let relayIdentifierLength = 16
    public static let nonceLength = 32
    public static let signatureLength = 64
    public static let keyLength = 32
    /// The longest ERROR message, in bytes; longer ones are cut at a character boundary.
    public static let maxErrorMessageBytes = 200

    enum Tag: UInt8 {
        case auth = 0x01, subscribe = 0x02, post = 0x03, delete = 0x04, ping = 0x05, carry = 0x06
        case challenge = 0x81, ready = 0x82, subscribed = 0x83, accepted = 0x84, deliver = 0x85, pong = 0x86, carryFromRelay = 0x87
        case error = 0x8F
    }
}

/// A 32-byte mailbox ID: the public half of the mailbox's Ed25519 key (§8.2).
public struct MailboxID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// `invalidArgument` unless 32 bytes.
    public init<C: Collection>(bytes: C) throws where C.Element == UInt8 {
        guard bytes.count == RelayFrame.keyLength else {
            throw YaOKError(.invalidArgument, "A mailbox ID is \(RelayFrame.keyLength) bytes, got \(bytes.count)")
        }
        self.bytes = Array(bytes)
    }

    public var description: String { Hex.encode(bytes) }
}

/// One SUBSCRIBE entry: a mailbox and the proof that the client holds its key.
public struct MailboxProof: Equatable, Sendable {
    public let mailbox: MailboxID
    public let signature: [UInt8]

    public init(mailbox: MailboxID, signature: [UInt8]) throws {
        guard signature.count == RelayFrame.signatureLength else {
            throw YaOKError(.invalidArgument, "A signature is \(RelayFrame.signatureLength) bytes")
        }
        self.mailbox = mailbox
        self.signature = signature
    }
}

/// What a DELETE names: one stored packet, by its mailbox and its message ID.
public struct StoredPacketRef: Hashable, Sendable {
    public let mailbox: MailboxID
    public let messageID: MessageID

    public init(mailbox: MailboxID, messageID: MessageID) {
        self.mailbox = mailbox
        self.messageID = messageID
    }
}
