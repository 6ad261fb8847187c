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
    case tlsFailure = "tls_failure"
    /// A kind written by a newer version: kept, not dropped.
    case other = "other"
}
