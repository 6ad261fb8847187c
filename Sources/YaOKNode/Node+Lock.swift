import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Setup, unlock (PIN and platform key), lock, lockout, auto-lock, reset (US-002, US-030,
/// US-051).
extension Node {
    // MARK: - Setup

    /// Creates the identity and seals it under `pin`, a PIN or a passphrase (see
    /// `SecretStrength` for what is accepted); leaves the node unlocked (AC-002-01). With a
    /// device secret set (`setDeviceSecret`), the vault is bound to it.
    /// Errors, in this order: `invalidName`, `pinTooShort` ("PIN must be at least 6
    /// digits", or "Passphrase must be at least 6 characters" when it is not all digits),
    /// `invalidArgument` (longer than 256 bytes, or control characters), `pinMismatch`
    /// ("PINs do not match"), `alreadyInitialized`; `invalidArgument` also when the
    /// configured costs are below the production minimum and this process has not opted in
    /// to test-only costs. An all-zero PIN is accepted with `Warnings.allZeroPIN`.
    public func setup(name: String, pin: String, confirmation: String) throws -> SetupResult {
        try setup(name: name, pin: try SecureBytes(utf8: pin), confirmation: try SecureBytes(utf8: confirmation))
    }

    /// `setup` with the PIN and its confirmation in guarded memory (UTF-8), as the C ABI
    /// passes them: they are never copied into ordinary memory, and wiped when released.
    public func setup(name: String, pin: SecureBytes, confirmation: SecureBytes) throws -> SetupResult {
        let name = try DisplayName.validate(name)
        let strength = try SecretStrength.check(pin)
        guard pin.constantTimeEquals(confirmation) else { throw YaOKError(.pinMismatch) }
        guard options.pinHashing.meetsProductionMinimum || testOnlyKDFCostsAllowed else {
            throw YaOKError(.invalidArgument, "PIN hashing costs below the production minimum are for tests only")
        }
        let (generation, deviceSecret) = try withStore { store, s -> (Int, SecureBytes?) in
            guard try store.vault(.pin) == nil else { throw YaOKError(.alreadyInitialized) }
            return (s.generation, s.deviceSecret)
        }
        // The slow part (Argon2id) runs without the node's lock so status calls stay quick.
        let identity = try Identity(name: name)
        let contents = VaultContents(name: name, identitySecrets: try identity.exportSecrets(),
                                     databaseKey: try SecureBytes.random(count: VaultContents.databaseKeyLength))
        let sealed = try SealedVault.seal(contents, pin: pin, hashing: options.pinHashing, deviceSecret: deviceSecret)
        let keys = try UnlockedKeys(contents)
        try withStore { store, s in
            guard s.generation == generation, try store.vault(.pin) == nil else { throw YaOKError(.alreadyInitialized) }
            try store.db.transaction {
                try store.saveVault(sealed)
                try store.replaceLockState(.init())
                try logSecurityEvent(store, .pinSetUp)
            }
            try install(keys, store, in: &s)
        }
        events.emit(.unlocked(method: "setup"))
        return SetupResult(identity: keys.identity, warnings: Node.isAllZero(pin) ? .allZeroPIN : [],
                           strength: strength, deviceBound: sealed.isDeviceBound)
    }

    static func isAllZero(_ pin: SecureBytes) -> Bool { pin.withUnsafeBytes { $0.allSatisfy { $0 == UInt8(ascii: "0") } } }

    // MARK: - Device secret

    /// Sets the device secret (32 bytes; nil clears it) that this node mixes into the PIN
    /// vault's key: a setup made while it is set binds the vault to it, and a bound vault
    /// then unlocks only with it. Meant for a secret the app keeps in hardware (Android
    /// Keystore/StrongBox, Secure Enclave, TPM), so that a copy of the data directory alone
    /// cannot be searched for the PIN. Kept in guarded memory until cleared or the node
    /// closes; works locked or unlocked; a bound vault that is already unlocked is not
    /// affected until its next unlock. docs/ABI.md, "Device secret", says how a platform
    /// layer derives it.
    public func setDeviceSecret(_ secret: [UInt8]?) throws {
        var copy: SecureBytes?
        if let secret {
            guard secret.count == SealedVault.deviceSecretLength else {
                throw YaOKError(.invalidArgument, "A device secret is \(SealedVault.deviceSecretLength) bytes")
            }
            copy = try SecureBytes(copying: secret)
        }
        try withStore { _, s in s.deviceSecret = copy }
    }

    // MARK: - Unlock

    /// Unlocks with the PIN or passphrase. Wrong: `wrongPIN` ("Incorrect PIN"). The third
    /// wrong PIN in a row, and every try during the 30 s that follow, is `lockedOut` ("Too
    /// many attempts. Try again in N seconds."); each further lockout before a successful
    /// unlock lasts twice as long, up to an hour. The failure is written before the PIN is
    /// checked, so killing the process during the check still counts it. The lockout runs
    /// on the boot clock: changing the wall clock or restarting does not shorten it. A
    /// missing or unreadable lock state counts as locked out (the longest lockout).
    /// At most three PINs are checked per lockout window, even when calls overlap: a try
    /// that finds three failures already counted (still being checked on other threads, or
    /// cut short by a kill) starts the lockout instead of checking a fourth PIN.
    ///
    /// Refused without counting a failure: input that setup would refuse (empty, too short,
    /// too long, control characters: the same errors as setup), `alreadyUnlocked` when the
    /// node is unlocked, `notInitialized`, `deviceSecretRequired` / `wrongDeviceSecret` for
    /// a vault bound to a device secret that is not set / differs, and `corruptStore` for a
    /// vault whose costs are outside the bounds or below the production minimum (unless this
    /// process opted in to test-only costs).
    public func unlock(pin: String) throws {
        try unlock(pin: try SecureBytes(utf8: pin))
    }

    /// `unlock` with the PIN in guarded memory (UTF-8), as the C ABI passes it.
    public func unlock(pin: SecureBytes) throws {
        try SecretStrength.validate(pin)
        let (vault, generation, deviceSecret) = try withStore { store, s -> (SealedVault, Int, SecureBytes?) in
            guard let vault = try store.vault(.pin) else { throw YaOKError(.notInitialized) }
            guard s.keys == nil else { throw YaOKError(.alreadyUnlocked) }
            try checkCosts(vault)
            if vault.isDeviceBound {
                guard let secret = s.deviceSecret else { throw YaOKError(.deviceSecretRequired) }
                guard vault.deviceSecretMatches(secret) else { throw YaOKError(.wrongDeviceSecret) }
            }
            var lock = try lockState(store)
            try checkLockout(lock, store)
            guard lock.failures < Node.maxPINAttempts else {
                throw Node.lockedOutError(milliseconds: try store.db.transaction { try startLockout(lock, store) })
            }
            lock.failures += 1  // assume failure until the PIN proves right
            try store.setLockState(lock)
            return (vault, s.generation, vault.isDeviceBound ? s.deviceSecret : nil)
        }
        let contents = try vault.open(pin: pin, deviceSecret: deviceSecret)
        try withStore { store, s in
            guard s.generation == generation else { throw YaOKError(.notInitialized) }
            let lock = try lockState(store)
            guard let contents else {
                if remainingLockout(lock) > 0 {
                    // An overlapping try started the lockout while this PIN was checked.
                    try logSecurityEvent(store, .wrongPIN, "attempt \(Node.maxPINAttempts) of \(Node.maxPINAttempts)")
                    try checkLockout(lock, store)
                }
                guard lock.failures >= Node.maxPINAttempts else {
                    try logSecurityEvent(store, .wrongPIN, "attempt \(lock.failures) of \(Node.maxPINAttempts)")
                    throw YaOKError(.wrongPIN)
                }
                let duration = try store.db.transaction {
                    try logSecurityEvent(store, .wrongPIN, "attempt \(Node.maxPINAttempts) of \(Node.maxPINAttempts)")
                    return try startLockout(lock, store)
                }
                throw Node.lockedOutError(milliseconds: duration)
            }
            let keys = try UnlockedKeys(contents)
            try store.db.transaction {
                try store.replaceLockState(.init())
                try logSecurityEvent(store, .unlocked)
            }
            try install(keys, store, in: &s)
        }
        events.emit(.unlocked(method: "pin"))
    }

    /// Unlocks with the platform key registered earlier (e.g. released by biometrics).
    /// `noPlatformKey` if none is registered, `wrongPlatformKey` if it does not match,
    /// `alreadyUnlocked` if the node is unlocked. A platform key has full entropy, so it is
    /// not subject to the PIN lockout.
    public func unlock(platformKey: [UInt8]) throws {
        let key = try Node.platformKey(platformKey)
        let (vault, generation) = try withStore { store, s -> (SealedVault, Int) in
            guard try store.vault(.pin) != nil else { throw YaOKError(.notInitialized) }
            guard s.keys == nil else { throw YaOKError(.alreadyUnlocked) }
            guard let vault = try store.vault(.platform) else { throw YaOKError(.noPlatformKey) }
            return (vault, s.generation)
        }
        let contents = try vault.open(platformKey: key)
        try withStore { store, s in
            guard s.generation == generation else { throw YaOKError(.notInitialized) }
            guard let contents else {
                try logSecurityEvent(store, .wrongPlatformKey)
                throw YaOKError(.wrongPlatformKey)
            }
            let keys = try UnlockedKeys(contents)
            try logSecurityEvent(store, .unlockedWithPlatformKey)
            try install(keys, store, in: &s)
        }
        events.emit(.unlocked(method: "platform_key"))
    }

    /// Bounds (a tampered file) and the production minimum (a test vault), before any
    /// failure is counted or any hashing is done.
    private func checkCosts(_ vault: SealedVault) throws {
        let hashing = vault.hashing
        guard hashing.isWithinBounds else { throw YaOKError(.corruptStore, "The data store is corrupt: unreadable vault") }
        guard hashing.meetsProductionMinimum || testOnlyKDFCostsAllowed else {
            throw YaOKError(.corruptStore, "The vault was sealed with test-only PIN hashing costs (\(hashing.opsLimit) passes, \(hashing.memLimit / 1024) KiB), below the production minimum: refused")
        }
    }

    /// Registers a 32-byte platform key as a second way to unlock (the PIN keeps working),
    /// replacing any earlier one. Needs the node unlocked.
    public func registerPlatformKey(_ platformKey: [UInt8]) throws {
        let key = try Node.platformKey(platformKey)
        try withUnlocked { store, keys, _ in
            let sealed = try SealedVault.seal(keys.contents, platformKey: key)
            try store.db.transaction {
                try store.saveVault(sealed)
                try logSecurityEvent(store, .platformKeyRegistered)
            }
        }
    }

    /// Removes the platform key; the PIN stays. Needs the node unlocked.
    public func removePlatformKey() throws {
        try withUnlocked { store, _, _ in
            guard try store.vault(.platform) != nil else { return }
            try store.db.transaction {
                try store.deleteVault(.platform)
                try logSecurityEvent(store, .platformKeyRemoved)
            }
        }
    }

    private static func platformKey(_ bytes: [UInt8]) throws -> SecureBytes {
        guard bytes.count == SealedVault.platformKeyLength else {
            throw YaOKError(.invalidArgument, "A platform key is \(SealedVault.platformKeyLength) bytes")
        }
        return try SecureBytes(copying: bytes)
    }

    /// The stored lock state. A missing or unreadable row (deleted or altered by someone
    /// with file access) counts as locked out: the row is rebuilt with the longest lockout,
    /// logged, and returned, so the caller refuses the try.
    func lockState(_ store: Store) throws -> Store.LockState {
        if let lock = try store.lockState() { return lock }
        let lock = Store.LockState(failures: 0, lockouts: Node.lockoutsAtMaximum,
                                   remaining: Node.maxLockoutMilliseconds, boot: bootNow)
        try store.db.transaction {
            try store.replaceLockState(lock)
            try logSecurityEvent(store, .lockout, "\(Node.maxLockoutMilliseconds / 1000) seconds (lock state missing or unreadable)")
        }
        return lock
    }

    /// The lockout left now, in milliseconds: what was stored, less the boot-clock time
    /// since it was stored if that was in this boot. Never more than the lockout's length
    /// (the row may have been altered).
    func remainingLockout(_ lock: Store.LockState) -> Int64 {
        guard lock.remaining > 0 else { return 0 }
        let bounded = min(lock.remaining, Node.lockoutMilliseconds(lockout: lock.lockouts))
        let now = bootNow
        guard lock.boot.bootID == now.bootID, now.milliseconds >= lock.boot.milliseconds else { return bounded }
        return max(0, bounded - (now.milliseconds - lock.boot.milliseconds))
    }

    /// Throws `lockedOut` while a lockout runs.
    private func checkLockout(_ lock: Store.LockState, _ store: Store) throws {
        let remaining = remainingLockout(lock)
        guard remaining > 0 else { return }
        try reanchor(lock, remaining, store)
        throw Node.lockedOutError(milliseconds: remaining)
    }

    /// Stores the lockout as measured now, so that what a reboot (whose boot clock cannot be
    /// compared) resumes from is what was left at the last look, a lockout stored in another
    /// boot counts down in this one, and an altered value too long for its lockout is
    /// replaced. Within one boot at most every 5 s, so that an app polling the status does
    /// not write (and sync) the database each time.
    private func reanchor(_ lock: Store.LockState, _ remaining: Int64, _ store: Store) throws {
        let now = bootNow
        let sameBoot = lock.boot.bootID == now.bootID && now.milliseconds >= lock.boot.milliseconds
        let stale = !sameBoot || now.milliseconds - lock.boot.milliseconds >= 5_000
            || lock.remaining > Node.lockoutMilliseconds(lockout: lock.lockouts)
        guard stale else { return }
        try store.setLockState(.init(failures: lock.failures, lockouts: lock.lockouts, remaining: remaining, boot: now))
    }

    /// Starts the next lockout (each one twice as long as the last) and logs it; returns
    /// its length in milliseconds. Call inside a transaction.
    private func startLockout(_ lock: Store.LockState, _ store: Store) throws -> Int64 {
        let lockouts = lock.lockouts + 1
        let duration = Node.lockoutMilliseconds(lockout: lockouts)
        try store.setLockState(.init(failures: 0, lockouts: lockouts, remaining: duration, boot: bootNow))
        try logSecurityEvent(store, .lockout, "\(duration / 1000) seconds")
        return duration
    }

    static func lockedOutError(milliseconds: Int64) -> YaOKError {
        let seconds = (milliseconds + 999) / 1000
        return YaOKError(.lockedOut, "Too many attempts. Try again in \(seconds) \(seconds == 1 ? "second" : "seconds").")
    }

    private func install(_ keys: UnlockedKeys, _ store: Store, in s: inout NodeState) throws {
        // Verifies and seals the security log, adopts a pre-integrity store (Store+Integrity).
        for event in try store.attach(keys.cipher, vault: keys.contents, now: now) { events.emit(.security(event)) }
        try loadLinkKey(keys, store, &s)
        s.keys = keys
        // The contacts' link keys (PROTOCOL.md §5.9) are derived now, while the identity
        // secret is here, and kept across a lock: one right after this unlock must not leave
        // new links unable to recognise contacts.
        _ = try? s.delivery.directory(store, keys)
        s.lastActivity = EventLoop.monotonicNanoseconds()
        scheduleAutoLock(&s)
        // What arrived while locked is opened now; the outbox resumes.
        loop.post { [weak self] in
            self?.processHeld()
            self?.notifyTransportsUnlocked()
        }
    }

    /// The link key, sealed under the database key: made and certified at the first unlock,
    /// then kept in memory until the node closes (docs/ARCHITECTURE.md, "Locked nodes").
    private func loadLinkKey(_ keys: UnlockedKeys, _ store: Store, _ s: inout NodeState) throws {
        guard s.delivery.linkKey == nil else { return }
        if let (secret, certificate) = try store.linkKey(cipher: keys.cipher) {
            var bytes = secret
            defer { Sodium.wipe(&bytes) }
            let key = try LinkKey(secret: SecureBytes(copying: bytes))
            let cert = try LinkCertificate(decoding: certificate)
            if cert.identity == keys.identity.publicIdentity, cert.certifies(linkPublicKey: key.publicKey) {
                s.delivery.linkKey = key
                s.delivery.linkCertificate = cert
                return
            }
        }
        let key = try LinkKey()
        let cert = try key.certificate(signedBy: keys.identity)
        var secret = key.secretBytes
        defer { Sodium.wipe(&secret) }
        try store.saveLinkKey(secret: secret, certificate: cert.bytes, cipher: keys.cipher)
        s.delivery.linkKey = key
        s.delivery.linkCertificate = cert
    }

    // MARK: - Lock

    /// Locks now, wiping the keys from memory. A no-op when already locked.
    public func lock() throws {
        try lock(reason: "manual", kind: .locked)
    }

    func lock(reason: String, kind: SecurityEventKind) throws {
        let wasUnlocked = try withStore { store, s -> Bool in
            guard s.dropKeys(loop: loop) else { return false }
            try logSecurityEvent(store, kind)
            return true
        }
        if wasUnlocked {
            // A lock ends relay sessions: they need the keys just wiped (§8).
            closeCarriers(reason: "Locked")
            events.emit(.locked(reason: reason))
        }
    }

    /// The identity, for signing and sealing. Needs the node unlocked. The returned object
    /// keeps its own copy of the secret keys alive until released.
    public func identity() throws -> Identity {
        try withUnlocked { _, keys, _ in keys.identity }
    }

    /// The public side of the identity (name, user ID, fingerprint, contact card): what an
    /// app shows on a profile screen, without handing out anything secret. Needs the node
    /// unlocked (the name and keys are sealed in the vault while locked). The card is version
    /// 2, carrying the prekey of today (UTC), made and stored when there is none yet, so a
    /// card shown today seals the first messages to a key erased 23 days later (§13.4). With
    /// `forwardSecrecy` off it is version 1: such a node opens nothing sealed to a prekey.
    public func profile() throws -> ContactCard {
        try withUnlocked { store, keys, s in
            let day = ReceiverKey.utcDay(ms: s.delivery.now)
            // A day a key_id cannot hold (a clock before 1970) would wrap into one never
            // used and never erased: no prekey then (a version 1 card, the stated fallback).
            guard s.delivery.forwardSecrecy, (0..<Int64(ReceiverKey.prekeyBit)).contains(day) else { return keys.identity.card }
            return keys.identity.card(prekey: try store.prekey(day: day, cipher: keys.cipher).key)
        }
    }

    // MARK: - Auto-lock

    /// Runs `body` without it counting as activity for auto-lock: for reads an app makes on
    /// its own (a screen that refreshes itself), so that a device left alone still locks.
    /// A call from another thread in the same few milliseconds may be undone with it, which
    /// can only make the lock come sooner.
    public func withoutActivity<T>(_ body: () throws -> T) rethrows -> T {
        let before = state.withLock { $0.lastActivity }
        let start = EventLoop.monotonicNanoseconds()
        defer { state.withLock { s in if s.lastActivity >= start { s.lastActivity = before } } }
        return try body()
    }


    /// Sets the idle time after which the node locks itself (persisted); needs the node
    /// unlocked. `.never` is allowed but returns `Warnings.autoLockDisabled`, which the app
    /// must show: "App will not auto-lock. Anyone with access to your phone can read your
    /// messages." (AC-051-02).
    @discardableResult
    public func setAutoLock(_ autoLock: AutoLock) throws -> Warnings {
        let ms: Int64
        switch autoLock {
        case .never: ms = -1
        case .after(let seconds):
            guard seconds > 0, seconds <= 30 * 24 * 3600 else {
                throw YaOKError(.invalidArgument, "Auto-lock timeout must be between 1 ms and 30 days")
            }
            ms = max(1, Int64((seconds * 1000).rounded()))
        }
        try withUnlocked { store, _, s in
            try store.db.transaction {
                try store.setSetting(Node.autoLockSetting, ms)
                try logSecurityEvent(store, .autoLockChanged, ms < 0 ? "never" : "\(ms) ms")
            }
            s.autoLock = ms < 0 ? .never : .after(seconds: Double(ms) / 1000)
            scheduleAutoLock(&s)
        }
        return autoLock == .never ? .autoLockDisabled : []
    }

    /// (Re)arms the auto-lock timer for the time left until the idle deadline.
    func scheduleAutoLock(_ s: inout NodeState) {
        if let timer = s.autoLockTimer { loop.cancel(timer) }
        s.autoLockTimer = nil
        guard s.keys != nil, case .after(let seconds) = s.autoLock else { return }
        let idle = Double(EventLoop.monotonicNanoseconds() &- s.lastActivity) / 1e9
        s.autoLockTimer = loop.schedule(after: max(0, seconds - idle)) { [weak self] in self?.autoLockTimerFired() }
    }

    /// On the event thread: lock if idle long enough, else wait for the rest. Cheaper than
    /// re-arming the timer on every call.
    private func autoLockTimerFired() {
        let due = (try? withStore { _, s -> Bool in
            s.autoLockTimer = nil
            guard s.keys != nil, case .after(let seconds) = s.autoLock else { return false }
            let idle = Double(EventLoop.monotonicNanoseconds() &- s.lastActivity) / 1e9
            if idle >= seconds { return true }
            scheduleAutoLock(&s)
            return false
        }) ?? false
        if due { try? lock(reason: "auto_lock", kind: .autoLocked) }
    }

    // MARK: - Status and reset

    /// Lock state, lockout, settings and the vault's costs; works while locked.
    public func status() throws -> NodeStatus {
        try withStore { store, s in
            let vault = try store.vault(.pin)
            var remaining: Int64 = 0
            var failures = 0
            if vault != nil {
                let lock = try lockState(store)
                remaining = remainingLockout(lock)
                failures = lock.failures
                if remaining > 0 { try reanchor(lock, remaining, store) }
            }
            return NodeStatus(initialized: vault != nil, locked: s.keys == nil,
                              lockoutSecondsRemaining: Int((remaining + 999) / 1000),
                              failedAttempts: failures, autoLock: s.autoLock,
                              platformKeyRegistered: try store.vault(.platform) != nil,
                              vault: vault.map {
                                  VaultStatus(pinHashing: $0.hashing, meetsProductionMinimum: $0.hashing.meetsProductionMinimum,
                                              deviceBound: $0.isDeviceBound)
                              })
        }
    }

    /// Forgotten PIN: destroys the identity, contacts, messages and settings, leaving an
    /// empty, uninitialised node whose log holds one `reset` event. Needs no PIN, only
    /// `confirm: true` (else `confirmationRequired`).
    public func reset(confirm: Bool) throws {
        guard confirm else {
            throw YaOKError(.confirmationRequired, "Reset destroys your identity and all messages; it needs explicit confirmation")
        }
        let wasUnlocked = try withStore { store, s -> Bool in
            let wasUnlocked = s.dropKeys(loop: loop)
            // Zero the sealed keys in the file first (secure_delete), then remove the files:
            // without the vault the rest is ciphertext under a key that no longer exists.
            try? store.db.execute("DELETE FROM vault; DELETE FROM prekeys; PRAGMA wal_checkpoint(TRUNCATE);")
            store.close()
            s.store = nil
            try Store.deleteFiles(in: dataDirectory)
            let fresh = try Store(directory: dataDirectory, exclusive: true)
            installErasureScheduler(fresh)
            s.store = fresh
            s.generation += 1
            s.delivery.online = [:]
            s.delivery.carry = CarryState()
            // The contacts are gone: so are the keys that recognised them on links (§5.9).
            s.delivery.contactLinkKeys = nil
            s.delivery.contactDigests = nil
            s.autoLock = .standard
            try logSecurityEvent(fresh, .reset)
            return wasUnlocked
        }
        if wasUnlocked { events.emit(.locked(reason: "reset")) }
    }
}
