import YaOKSupport
import YaOKWire
import YaOKCrypto

/// A stored message (US-020, US-023).
public struct Message: Sendable, Equatable {
    /// The 16-byte message ID that also travels in the packet header.
    public let messageID: MessageID
    /// The conversation: the contact's id (it stays valid if the contact is deleted and
    /// the messages are kept).
    public let conversationID: Int64
    public let direction: MessageDirection
    public let status: MessageStatus
    public let text: String
    /// The sender's clock, milliseconds since 1970: history is ordered by it.
    public let senderTimestamp: Int64
    /// When this node stored the message.
    public let createdAt: Int64
    /// Outgoing: when the first transport accepted it.
    public let sentAt: Int64?
    /// Incoming: when it arrived here.
    public let receivedAt: Int64?
    public let unread: Bool
    /// Incoming only: the sender's body was not UTF-8 and this text is it with U+FFFD in
    /// place of each ill-formed sequence (docs/PROTOCOL.md §3.2), so up to
    /// `Envelope.maxReceivedTextLength` bytes.
    public var repaired: Bool = false

    public var messageIDHex: String { messageID.description }

    /// This message with another status, as `Store.setStatus` leaves it (the first move to
    /// `sent` records the sent time): the engine tells the app without reading the row back
    /// and opening its body again.
    package func with(status: MessageStatus, now: Int64) -> Message {
        Message(messageID: messageID, conversationID: conversationID, direction: direction, status: status, text: text,
                senderTimestamp: senderTimestamp, createdAt: createdAt,
                sentAt: status == .sent && sentAt == nil ? now : sentAt, receivedAt: receivedAt, unread: unread,
                repaired: repaired)
    }
}

/// The raw values are the SQLite encoding of `messages.direction`; YAOK_DIRECTION_* are the
/// FFI layer's.
public enum MessageDirection: Int, Sendable, Equatable {
    case outgoing = 0
    case incoming = 1

    public var name: String { self == .outgoing ? "outgoing" : "incoming" }
}

/// Delivery status (AC-023-03). Incoming messages are stored as `delivered`. The raw values
/// are the SQLite encoding of `messages.status` (fixed by the stores on disk; never
/// renumbered); the C numbers (YAOK_MESSAGE_*) are the FFI layer's own mapping.
public enum MessageStatus: Int, Sendable, Equatable, CaseIterable {
    case pending = 0
    case sending = 1
    case sent = 2
    case delivered = 3
    case failed = 4

    public var name: String {
        switch self {
        case .pending: return "pending"
        case .sending: return "sending"
        case .sent: return "sent"
        case .delivered: return "delivered"
        case .failed: return "failed"
        }
    }
}

/// One page of a conversation, oldest first. `olderCursor` fetches the page before it;
/// nil when this page reaches the first message.
public struct HistoryPage: Sendable, Equatable {
    public let messages: [Message]
    public let olderCursor: String?
}
