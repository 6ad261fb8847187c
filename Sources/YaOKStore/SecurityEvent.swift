import YaOKSupport
import YaOKWire
import YaOKCrypto

/// One entry of the persisted security log. It never holds message content or keys.
public struct SecurityEvent: Sendable, Equatable {
    public let id: Int64
    /// Wall-clock milliseconds since 1970.
    public let time: Int64
    public let kind: SecurityEventKind
    public let detail: String
    /// This event failed verification: it was altered in the file, or an event before it
    /// was removed (Store+Integrity.swift). Such findings are also logged as `logTampered`.
    public let tampered: Bool

    package init(id: Int64, time: Int64, kind: SecurityEventKind, detail: String, tampered: Bool = false) {
        self.id = id
        self.time = time
        self.kind = kind
        self.detail = detail
        self.tampered = tampered
    }
}

/// What happened. The raw value is what the store and the C ABI's JSON carry.
public enum SecurityEventKind: String, Sendable, Equatable, CaseIterable {
    case pinSetUp = "pin_set_up"
    case unlocked = "unlocked"
    case unlockedWithPlatformKey = "unlocked_platform_key"
    case wrongPIN = "wrong_pin"
    case wrongPlatformKey = "wrong_platform_key"
    case lockout = "lockout"
    case locked = "locked"
    case autoLocked = "auto_locked"
    case autoLockChanged = "auto_lock_changed"
    case platformKeyRegistered = "platform_key_registered"
    case platformKeyRemoved = "platform_key_removed"
    case reset = "reset"
    case contactVerified = "contact_verified"
    case unknownSender = "unknown_sender"
    case tamperedMessage = "tampered_message"
    /// A contact's authentic message whose text was not UTF-8: stored with U+FFFD in place
    /// of the invalid bytes and acknowledged (docs/PROTOCOL.md §3, "Message text").
    case invalidText = "invalid_text"
    case tlsFailure = "tls_failure"
    /// The log itself was found altered: events changed, removed, or its seal broken
    /// (`detail` says what). Written at the unlock (or listing) that found it.
    case logTampered = "log_tampered"
    /// An outbox entry failed its integrity check (changed outside Ya OK): removed unsent,
    /// its message `failed` (a retry seals it again), the other entries sent as before.
    case outboxTampered = "outbox_tampered"
    /// A contact's forward-secrecy keys failed their integrity check at the hourly expiry:
    /// left as they are, the other contacts' expired as before. Once per contact a run.
    case receiverKeysDamaged = "receiver_keys_damaged"
    /// A kind written by a newer version: kept, not dropped.
    case other = "other"
}
