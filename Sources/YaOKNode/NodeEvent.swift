import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// What a node tells the app, on the node's event thread (see `Node.setEventHandler`).
/// The C ABI passes a kind number (YAOK_EVENT_*, given in the FFI layer) and `json`
/// (schemas in docs/ABI.md).
public enum NodeEvent: Sendable, Equatable {
    /// The node locked: `reason` is "manual", "auto_lock" or "reset".
    case locked(reason: String)
    /// The node unlocked: `method` is "pin", "platform_key" or "setup".
    case unlocked(method: String)
    /// A security event was written to the log.
    case security(SecurityEvent)
    /// A message was stored (sent by us or received).
    case messageStored(Message)
    /// An outgoing message changed status.
    case messageStatusChanged(Message)
    /// A contact was added, renamed, verified, deleted or changed connection status.
    case contactsChanged(contactID: Int64)
    /// A new message arrived: who from and its ID, never its content, so that a
    /// notification can say "Bob: New message" without holding the text.
    case messageReceived(contactID: Int64, messageID: MessageID)
    /// A transport started, stopped or failed.
    case transportChanged(TransportState)
    /// Something a person should read about a transport that is not a change of state:
    /// "Rate limit reached. Try again in 12 minutes.", "Relay: certificate rejected …".
    case transportNotice(TransportNotice)
    /// Carried packets were taken, handed on, delivered or purged: the figures after an
    /// encounter (at most one event per link and minute, so a busy meeting is not a flood).
    case carryActivity(CarryStatistics)
    /// A link was opened (by an app's `yaok_link_open` or a transport's connection); its
    /// handshake runs now.
    case linkOpened(LinkEventInfo)
    /// A link's handshake completed and recognition settled (docs/PROTOCOL.md §5.9): the peer
    /// is a contact (`contactID` nil while locked, before the contacts are read) or a
    /// stranger. Sent again if that changes (the contact deleted, matched at unlock).
    case linkAuthenticated(LinkEventInfo, isContact: Bool, contactID: Int64?)
    /// A link closed, by either side, with the reason ("Handshake timed out", "Closed by
    /// the application", a protocol violation, "The node is closing").
    case linkClosed(LinkEventInfo, reason: String)
    /// A transport's connection changed: connected, connecting, or disconnected with the
    /// reason and the next retry (a relay with a wrong pin: disconnected, pin mismatch).
    case transportConnection(name: String, TransportConnection)
    /// "Internet: Available/Unavailable" changed (AC-060-01).
    case internetChanged(InternetStatus)

    public var json: JSON {
        switch self {
        case .locked(let reason): return .object([("reason", .string(reason))])
        case .unlocked(let method): return .object([("method", .string(method))])
        case .security(let event): return event.json
        case .messageStored(let message), .messageStatusChanged(let message): return message.json
        case .contactsChanged(let id): return .object([("contact_id", .int(id))])
        case .messageReceived(let contact, let id):
            return .object([("contact_id", .int(contact)), ("message_id", .string(id.description))])
        case .transportChanged(let t):
            return .object([("name", .string(t.name)), ("display_name", .string(t.displayName)),
                            ("state", .string(t.phase.rawValue)), ("error", t.error.map { .string($0) } ?? .null)])
        case .transportNotice(let n):
            return .object([("transport", .string(n.transport)), ("message", .string(n.message)),
                            ("retry_after_ms", n.retryAfterMs.map { .int($0) } ?? .null)])
        case .carryActivity(let s): return s.json
        case .linkOpened(let l): return .object(l.jsonFields)
        case .linkAuthenticated(let l, let isContact, let contactID):
            return .object(l.jsonFields + [("peer", .string(isContact ? "contact" : "stranger")),
                                           ("contact_id", contactID.map { .int($0) } ?? .null)])
        case .linkClosed(let l, let reason): return .object(l.jsonFields + [("reason", .string(reason))])
        case .transportConnection(let name, let c):
            guard case .object(let fields) = c.json else { return c.json }
            return .object([("name", .string(name))] + fields)
        case .internetChanged(let i): return i.json
        }
    }
}

/// Which link a link event is about: its id (the id diagnostics and `yaok_link_id` give)
/// and its transport's name.
public struct LinkEventInfo: Sendable, Equatable {
    public let linkID: UInt64
    public let transport: String

    var jsonFields: [(String, JSON)] { [("link_id", .int(Int64(linkID))), ("transport", .string(transport))] }
}

/// A transport's notice (`NodeEvent.transportNotice`).
public struct TransportNotice: Sendable, Equatable {
    public let transport: String
    public let message: String
    /// When trying again makes sense, if the transport knows (a relay's rate limit).
    public let retryAfterMs: Int64?

    public init(transport: String, message: String, retryAfterMs: Int64? = nil) {
        self.transport = transport
        self.message = message
        self.retryAfterMs = retryAfterMs
    }
}

// JSON forms shared by events and the C ABI's structured results (docs/ABI.md).

extension SecurityEvent {
    public var json: JSON {
        .object([("id", .int(id)), ("time_ms", .int(time)), ("kind", .string(kind.rawValue)), ("detail", .string(detail)),
                 ("tampered", .bool(tampered))])
    }
}

extension Message {
    public var json: JSON {
        .object([
            ("message_id", .string(messageIDHex)),
            ("conversation_id", .int(conversationID)),
            ("direction", .string(direction.name)),
            ("status", .string(status.name)),
            ("text", .string(text)),
            ("sender_timestamp_ms", .int(senderTimestamp)),
            ("created_ms", .int(createdAt)),
            ("sent_ms", sentAt.map { .int($0) } ?? .null),
            ("received_ms", receivedAt.map { .int($0) } ?? .null),
            ("unread", .bool(unread)),
            ("repaired", .bool(repaired)),
        ])
    }
}

extension HistoryPage {
    public var json: JSON {
        .object([("messages", .array(messages.map(\.json))), ("older_cursor", olderCursor.map { .string($0) } ?? .null)])
    }
}

extension ConnectionStatus {
    public var json: JSON {
        switch self {
        case .online(let transport): return .object([("state", .string("online")), ("transport", .string(transport))])
        case .lastSeen(let t): return .object([("state", .string("last_seen")), ("last_seen_ms", .int(t))])
        case .neverConnected: return .object([("state", .string("never_connected"))])
        }
    }
}

extension PublicIdentity {
    /// The fields every JSON form of a person starts with (contact, preview, profile).
    func jsonFields(name: String) -> [(String, JSON)] {
        [("name", .string(name)), ("user_id", .string(userID)),
         ("fingerprint", .string(fingerprint.hex)), ("fingerprint_short", .string(fingerprint.short))]
    }
}

extension Contact {
    public var json: JSON {
        .object([("id", .int(id))] + publicIdentity.jsonFields(name: name) + [
            ("verified", .bool(verified)),
            ("added_ms", .int(addedAt)),
            ("connection", connection.json),
        ])
    }
}

extension ContactCard {
    /// A profile: the public identity behind a card, with the card text itself.
    public var json: JSON {
        .object(publicIdentity.jsonFields(name: name) + [("card", .string(text))])
    }
}

extension ContactPreview {
    public var json: JSON {
        .object(publicIdentity.jsonFields(name: name)
                + [("existing_contact_id", existingContactID.map { .int($0) } ?? .null),
                   ("mixed_scripts", .bool(mixedScripts))])
    }
}

extension NodeStatus {
    public var json: JSON {
        let autoLockSeconds: JSON
        switch autoLock {
        case .after(let s): autoLockSeconds = .int(Int64((s * 1000).rounded()))
        case .never: autoLockSeconds = .null
        }
        return .object([
            ("initialized", .bool(initialized)),
            ("locked", .bool(locked)),
            ("lockout_seconds", .int(Int64(lockoutSecondsRemaining))),
            ("failed_attempts", .int(Int64(failedAttempts))),
            ("auto_lock_ms", autoLockSeconds),
            ("platform_key_registered", .bool(platformKeyRegistered)),
            ("vault", vault.map(\.json) ?? .null),
        ])
    }
}

extension VaultStatus {
    public var json: JSON {
        .object([
            ("kdf", .string("argon2id13")),
            ("ops_limit", .int(Int64(pinHashing.opsLimit))),
            ("mem_limit", .int(Int64(pinHashing.memLimit))),
            ("meets_production_minimum", .bool(meetsProductionMinimum)),
            ("device_bound", .bool(deviceBound)),
        ])
    }
}

extension SecretStrength {
    public var json: JSON {
        .object([
            ("strength", .string(level.rawValue)),
            ("estimated_bits", .int(Int64(estimatedBits))),
            ("is_pin", .bool(isPIN)),
        ])
    }
}
