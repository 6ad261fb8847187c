import YaOKSupport
import YaOKWire
import YaOKStore

/// A message still on its way (US-022): pending or failed, with its retry state.
public struct OutboxEntry: Sendable, Equatable {
    public let messageID: MessageID
    public let contactID: Int64
    public let status: MessageStatus
    /// Attempts that failed so far.
    public let attempts: Int
    /// When it is tried next (wall-clock ms), unless a link to the contact appears sooner.
    public let nextAttemptAt: Int64
    public let expiresAt: Int64
    /// No link to the recipient right now: "Will send when connected".
    public let waitingForTransport: Bool

    public var json: JSON {
        .object([
            ("message_id", .string(messageID.description)),
            ("contact_id", .int(contactID)),
            ("status", .string(status.name)),
            ("attempts", .int(Int64(attempts))),
            ("next_attempt_ms", .int(nextAttemptAt)),
            ("expires_ms", .int(expiresAt)),
            ("note", waitingForTransport ? .string("Will send when connected") : .null),
        ])
    }
}
