import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The lock state of a node; readable while locked.
public struct NodeStatus: Sendable, Equatable {
    /// An identity exists (setup has run).
    public let initialized: Bool
    public let locked: Bool
    /// Seconds until the PIN may be tried again; 0 when not locked out.
    public let lockoutSecondsRemaining: Int
    /// Wrong PINs since the last success or lockout.
    public let failedAttempts: Int
    public let autoLock: AutoLock
    public let platformKeyRegistered: Bool
    /// The PIN vault's key derivation; nil before setup.
    public let vault: VaultStatus?
}

/// How the PIN vault is sealed (readable while locked; nothing secret).
public struct VaultStatus: Sendable, Equatable {
    /// The Argon2id costs the vault was sealed with.
    public let pinHashing: PINHashing
    /// At least `PINHashing.standard` in passes and memory. A vault below it (sealed with
    /// test-only costs) opens only in a process that opted in to test-only costs.
    public let meetsProductionMinimum: Bool
    /// Bound to a device secret: unlocking needs `setDeviceSecret` first.
    public let deviceBound: Bool
}

/// When an unlocked node locks itself (US-051).
public enum AutoLock: Sendable, Equatable {
    /// After this many seconds without a call that uses the keys.
    case after(seconds: Double)
    /// Never: the caller gets `Warnings.autoLockDisabled`.
    case never

    /// Five minutes, the app's default (AC-030-06).
    public static let standard = AutoLock.after(seconds: 300)
}

/// Non-fatal conditions the app must show the user.
public struct Warnings: OptionSet, Sendable, Equatable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The PIN is all zeros: accepted, but weak (US-002 edge case).
    public static let allZeroPIN = Warnings(rawValue: 1 << 0)
    /// "App will not auto-lock. Anyone with access to your phone can read your messages."
    public static let autoLockDisabled = Warnings(rawValue: 1 << 1)
}

/// What setup returns: the new identity, any warnings, and how strong the chosen PIN or
/// passphrase looks (for a meter; it is not stored anywhere).
public struct SetupResult: Sendable {
    public let identity: Identity
    public let warnings: Warnings
    public let strength: SecretStrength
    /// The vault was bound to the device secret set with `setDeviceSecret`.
    public let deviceBound: Bool
}
