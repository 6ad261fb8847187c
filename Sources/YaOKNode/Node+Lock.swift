import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Setup, unlock (PIN and platform key), lock, lockout, auto-lock, reset (US-002, US-030,
/// US-051).
extension Node {
    // MARK: - Setup

    /// Creates the identity and seals it under `pin`; leaves the node unlocked (AC-002-01).
    /// Errors, in this order: `invalidName`, `pinTooShort` ("PIN must be at least 6
    /// digits"), `pinMismatch` ("PINs do not match"), `alreadyInitialized`.
    /// An all-zero PIN is accepted with `Warnings.allZeroPIN`.
    public func setup(name: String, pin: String, confirmation: String) throws -> SetupResult {
        try setup(name: name, pin: try SecureBytes(utf8: pin), confirmation: try SecureBytes(utf8: confirmation))
    }

    /// `setup` with the PIN and its confirmation in guarded memory (UTF-8), as the C ABI
    /// passes them: they are never copied into ordinary memory, and wiped when released.
    public func setup(name: String, pin: SecureBytes, confirmation: SecureBytes) throws -> SetupResult {
        let name = try DisplayName.validate(name)
        try Node.validateNewPIN(pin)
        guard pin.constantTimeEquals(confirmation) else { throw YaOKError(.pinMismatch) }
        let generation = try withStore { store, s -> Int in
            guard try store.vault(.pin) == nil else { throw YaOKError(.alreadyInitialized) }
            return s.generation
        }
        // The slow part (Argon2id) runs without the node's lock so status calls stay quick.
        let identity = try Identity(name: name)
        let contents = VaultContents(name: name, identitySecrets: try identity.exportSecrets(),
                                     databaseKey: try SecureBytes.random(count: VaultContents.databaseKeyLength))
        let sealed = try SealedVault.seal(contents, pin: pin, hashing: options.pinHashing)
        let keys = try UnlockedKeys(contents)
        try withStore { store, s in
            guard s.generation == generation, try store.vault(.pin) == nil else { throw YaOKError(.alreadyInitialized) }
            try store.db.transaction {
                try store.saveVault(sealed)
                try store.setLockState(.init(failures: 0, lockedUntil: 0))
                try logSecurityEvent(store, .pinSetUp)
            }
            try install(keys, store, in: &s)
        }
        events.emit(.unlocked(method: "setup"))
        return SetupResult(identity: keys.identity, warnings: Node.isAllZero(pin) ? .allZeroPIN : [])
    }

    static func validateNewPIN(_ pin: SecureBytes) throws {
        try pin.withUnsafeBytes { pin in
            guard pin.count >= 6, pin.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                throw YaOKError(.pinTooShort)
            }
            guard pin.count <= 64 else { throw YaOKError(.invalidArgument, "PIN must be at most 64 digits") }
        }
    }

    static func isAllZero(_ pin: SecureBytes) -> Bool { pin.withUnsafeBytes { $0.allSatisfy { $0 == UInt8(ascii: "0") } } }

    // MARK: - Unlock

    /// Unlocks with the PIN. Wrong: `wrongPIN` ("Incorrect PIN"). The third wrong PIN in a
    /// row, and every try during the 30 s that follow, is `lockedOut` ("Too many attempts.
    /// Try again in N seconds."); each further lockout before a successful unlock lasts twice
    /// as long, up to an hour. The failure is written before the PIN is checked, so
    /// killing the process during the check still counts it. Not set up: `notInitialized`.
    /// At most three PINs are checked per lockout window, even when calls overlap: a try
    /// that finds three failures already counted (still being checked on other threads, or
    /// cut short by a kill) starts the lockout instead of checking a fourth PIN.
    public func unlock(pin: String) throws {
        try unlock(pin: try SecureBytes(utf8: pin))
    }

    /// `unlock` with the PIN in guarded memory (UTF-8), as the C ABI passes it.
    public func unlock(pin: SecureBytes) throws {
        let (vault, generation) = try withStore { store, s -> (SealedVault, Int) in
            guard let vault = try store.vault(.pin) else { throw YaOKError(.notInitialized) }
            var lock = try store.lockState()
            try checkLockout(lock, store)
            guard lock.failures < Node.maxPINAttempts else {
                throw Node.lockedOutError(milliseconds: try store.db.transaction { try startLockout(lock, store) })
            }
            lock.failures += 1  // assume failure until the PIN proves right
            try store.setLockState(lock)
            return (vault, s.generation)
        }
        let contents = try vault.open(pin: pin)
        try withStore { store, s in
            guard s.generation == generation else { throw YaOKError(.notInitialized) }
            let lock = try store.lockState()
            guard let contents else {
                if lock.lockedUntil > now {
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
                try store.setLockState(.init(failures: 0, lockedUntil: 0))
                try logSecurityEvent(store, .unlocked)
            }
            try install(keys, store, in: &s)
        }
        events.emit(.unlocked(method: "pin"))
    }

    /// Unlocks with the platform key registered earlier (e.g. released by biometrics).
    /// `noPlatformKey` if none is registered, `wrongPlatformKey` if it does not match.
    /// A platform key has full entropy, so it is not subject to the PIN lockout.
    public func unlock(platformKey: [UInt8]) throws {
        let key = try Node.platformKey(platformKey)
        let (vault, generation) = try withStore { store, s -> (SealedVault, Int) in
            guard try store.vault(.pin) != nil else { throw YaOKError(.notInitialized) }
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

    private func checkLockout(_ lock: Store.LockState, _ store: Store) throws {
        let remaining = lock.lockedUntil - now
        guard lock.lockedUntil > 0, remaining > 0 else { return }
        // A clock set backwards must not stretch the lockout past its length.
        let bounded = min(remaining, Node.lockoutMilliseconds(lockout: lock.lockouts))
        if bounded < remaining {
            try store.setLockState(.init(failures: lock.failures, lockedUntil: now + bounded, lockouts: lock.lockouts))
        }
        throw Node.lockedOutError(milliseconds: bounded)
    }

    /// Starts the next lockout (each one twice as long as the last) and logs it; returns
    /// its length in milliseconds. Call inside a transaction.
    private func startLockout(_ lock: Store.LockState, _ store: Store) throws -> Int64 {
        let lockouts = lock.lockouts + 1
        let duration = Node.lockoutMilliseconds(lockout: lockouts)
        try store.setLockState(.init(failures: 0, lockedUntil: now + duration, lockouts: lockouts))
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
        s.lastActivity = EventLoop.monotonicNanoseconds()
        scheduleAutoLock(&s)
        // What arrived while locked is opened now; the outbox resumes.
        loop.post { [weak self] in self?.processHeld() }
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
        if wasUnlocked { events.emit(.locked(reason: reason)) }
    }

    /// The identity, for signing and sealing. Needs the node unlocked. The returned object
    /// keeps its own copy of the secret keys alive until released.
    public func identity() throws -> Identity {
        try withUnlocked { _, keys, _ in keys.identity }
    }

    /// The public side of the identity (name, user ID, fingerprint, contact card): what an
    /// app shows on a profile screen, without handing out anything secret. Needs the node
    /// unlocked (the name and keys are sealed in the vault while locked).
    public func profile() throws -> ContactCard {
        try identity().card
    }

    // MARK: - Auto-lock

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

    /// Lock state, lockout and settings; works while locked.
    public func status() throws -> NodeStatus {
        try withStore { store, s in
            let lock = try store.lockState()
            let remaining = lock.lockedUntil > 0
                ? min(max(0, lock.lockedUntil - now), Node.lockoutMilliseconds(lockout: lock.lockouts)) : 0
            return NodeStatus(initialized: try store.vault(.pin) != nil, locked: s.keys == nil,
                              lockoutSecondsRemaining: Int((remaining + 999) / 1000),
                              failedAttempts: lock.failures, autoLock: s.autoLock,
                              platformKeyRegistered: try store.vault(.platform) != nil)
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
            try? store.db.execute("DELETE FROM vault; PRAGMA wal_checkpoint(TRUNCATE);")
            store.close()
            s.store = nil
            try Store.deleteFiles(in: dataDirectory)
            let fresh = try Store(directory: dataDirectory)
            s.store = fresh
            s.generation += 1
            s.online = [:]
            s.autoLock = .standard
            try logSecurityEvent(fresh, .reset)
            return wasUnlocked
        }
        if wasUnlocked { events.emit(.locked(reason: "reset")) }
    }
}
