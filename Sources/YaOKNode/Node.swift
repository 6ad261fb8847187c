import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// A Ya OK profile: one identity, its contacts, messages and security log, kept in one
/// data directory. Several nodes (on different directories) are fully independent.
///
/// Threads: every method may be called from any thread; calls are serialised by the
/// node's lock. Each node owns an event thread (`EventLoop`) where auto-lock fires and the
/// event handler runs — never while the node's lock is held, so a handler may call back in.
///
/// Locking: after `open` a node is locked. `setup` (first time) or `unlock` loads the keys;
/// `lock`, auto-lock and `reset` drop them (their guarded memory is wiped on release).
/// Every method that needs keys throws `YaOKError(.locked)` while locked.
public final class Node: Sendable {
    public struct Options: Sendable {
        /// Argon2id costs for a new PIN. Keep `.standard`, or raise it; costs below it
        /// (`PINHashing.meetsProductionMinimum`) are refused at setup and unlock unless the
        /// process opted in to test-only costs. An existing vault keeps the costs it was
        /// sealed with.
        public var pinHashing: PINHashing = .standard
        /// Wall clock in milliseconds since 1970, for stored times (the lockout uses the
        /// boot clock instead). Injectable so that tests can move time; the default is
        /// CLOCK_REALTIME.
        public var clock: @Sendable () -> Int64 = Node.systemClock
        /// The boot clock the lockout is measured with (CLOCK_BOOTTIME and the boot ID).
        /// Package-only, for tests that move time or simulate a reboot.
        package var bootClock: @Sendable () -> BootTime = { BootTime.now() }
        /// TEST ONLY, package-only: lets this node seal and open vaults below the production
        /// minimum (the test suites' fast costs). C and Python tests opt in through
        /// YAOK_TEST_INSECURE_KDF=1 instead.
        package var allowTestOnlyKDFCosts = false
        /// Package-only, for the simulator: the engine arms no timers on the event loop (the
        /// delivery timer, a link's handshake deadline); the caller runs them, through
        /// `runDeliveryTimers`, when its own clock says so. A timer on the real clock fires
        /// wherever the thread happens to be, and a simulation on a virtual clock would then
        /// differ from one run to the next.
        package var callerRunsTimers = false
        /// Forward secrecy for messages that wait (docs/PROTOCOL.md §13): seal messages and
        /// their carried copies to the contacts' announced receiver keys and announce ours.
        /// On by default; off, every message is sealed to the long-term key as before §13
        /// (everything recorded then opens with a seized device). Off still opens what
        /// contacts sealed to keys announced while it was on: turning it off loses nothing.
        public var forwardSecrecy = true
        /// Package-only, for tests: how long the checkpoint that erases deleted keys from the
        /// files waits to cover later erasures too (Node+Erasure.swift). The stated bound is
        /// `Node.erasureDelaySeconds`.
        package var erasureDelaySeconds = Node.erasureDelaySeconds
        /// Package-only, for yaok-bench: record how long each section waits for and holds
        /// the node's lock (`Node.lockStatistics`). Off: one branch a section.
        package var lockStatistics = false

        public init() {}
    }

    /// Three wrong PINs in a row lock the PIN out for thirty seconds (AC-030-03).
    public static let maxPINAttempts = Store.LockState.maxFailures
    public static let lockoutMilliseconds: Int64 = 30_000
    /// The longest lockout: one hour.
    public static let maxLockoutMilliseconds: Int64 = 3_600_000
    /// The lockout count from which every lockout is the longest (30 s doubled 7 times
    /// exceeds an hour).
    static let lockoutsAtMaximum = 8

    /// How long the `n`th lockout since the last successful unlock lasts (n ≥ 1): 30 s, then
    /// doubling up to an hour. A 6-digit PIN has only 10^6 values; at a constant 3 tries per
    /// 30 s half of them fall in about two months, at 3 per hour it takes decades.
    public static func lockoutMilliseconds(lockout n: Int) -> Int64 {
        let doublings = min(max(n, 1) - 1, 7)
        return min(lockoutMilliseconds << Int64(doublings), maxLockoutMilliseconds)
    }

    public let dataDirectory: String
    let options: Options
    let loop: EventLoop
    let state: Locked<NodeState>
    let events: EventSink
    /// Held while the node is open: one node per data directory.
    let directoryLock: DirectoryLock
    /// Held while a transport is switched on or off (`setTransport`), state write included:
    /// an enable and a disable that overlap end in the state of the one that came last, not
    /// "failed: disabled while starting" after the disable. Never the state lock (a start
    /// waits for a kernel or a network).
    let transportSwitching = Locked(())
    /// Sends sealed outside the lock wait here for their group commit (SendCommitQueue).
    let sendCommits = SendCommitQueue<SealedSend, [Message]>()

    /// Opens (creating if needed) the node stored in `dataDirectory`, locked.
    /// Migrates an older store; a newer or damaged one is `corruptStore`.
    public init(dataDirectory: String, options: Options = Options()) throws {
        try Sodium.ensureInitialized()
        self.dataDirectory = dataDirectory
        self.options = options
        directoryLock = try DirectoryLock(directory: dataDirectory)
        let store = try Store(directory: dataDirectory, exclusive: true)
        let autoLock = try Node.loadAutoLock(store)
        let carry = try CarryState.load(store)
        loop = try EventLoop()
        state = Locked(NodeState(store: store, autoLock: autoLock,
                                 delivery: DeliveryEngine(clock: options.clock, loop: loop, callerRunsTimers: options.callerRunsTimers)))
        events = EventSink(loop: loop)
        state.withLock { s in
            s.delivery.node = self
            s.delivery.carry = carry
            s.delivery.forwardSecrecy = options.forwardSecrecy
        }
        installErasureScheduler(store)
    }

    deinit { close() }

    /// Locks, stops the event thread (waiting for a running handler to return, unless
    /// called from the handler itself) and closes the database. Later calls throw `closed`.
    /// Idempotent.
    public func close() {
        stopDelivery()
        loop.stop()
        state.withLock { s in
            s.dropKeys(loop: loop)
            s.deviceSecret = nil
            s.store?.close()
            s.store = nil
            s.delivery.linkKey = nil
            s.delivery.contactLinkKeys = nil
            s.delivery.contactDigests = nil
        }
        directoryLock.release()
        events.setHandler(nil)
    }

    /// Sets the function that receives this node's events, replacing (and releasing) the
    /// previous one; nil removes it. The handler runs on the node's event thread, one event
    /// at a time. It receives the events emitted from now on; events emitted earlier went
    /// (or go, if still queued) to the handler registered then, or nowhere. A previous
    /// handler is released on the event thread after the last event it was given, so it is
    /// never released while running.
    public func setEventHandler(_ handler: (@Sendable (NodeEvent) -> Void)?) {
        events.setHandler(handler)
    }

    public static let systemClock: @Sendable () -> Int64 = { Clock.milliseconds() }

    // MARK: - Internal helpers shared by the Node+*.swift files

    var now: Int64 { options.clock() }
    var bootNow: BootTime { options.bootClock() }

    /// Whether vaults below the production minimum may be sealed and opened here.
    var testOnlyKDFCostsAllowed: Bool { options.allowTestOnlyKDFCosts || PINHashing.testCostsAllowedByEnvironment }

    /// Runs `body` under the node's lock with the open store.
    /// `section`: what `lockStatistics` counts it as (nil: by the thread).
    func withStore<R: Sendable>(section: LockSection? = nil, _ body: (Store, inout NodeState) throws -> R) throws -> R {
        try withState(section: section) { s in
            guard let store = s.store else { throw YaOKError(.closed, "The node has been closed") }
            return try body(store, &s)
        }
    }

    /// Runs `body` under the node's lock with the store and the keys; `locked` if there are
    /// no keys. Counts as activity for auto-lock.
    func withUnlocked<R: Sendable>(section: LockSection? = nil,
                                   _ body: (Store, UnlockedKeys, inout NodeState) throws -> R) throws -> R {
        try withStore(section: section) { store, s in
            guard let keys = s.keys else { throw YaOKError(.locked) }
            s.lastActivity = EventLoop.monotonicNanoseconds()
            return try body(store, keys, &s)
        }
    }

    /// Writes a security event and announces it. Call under the node's lock.
    @discardableResult
    func logSecurityEvent(_ store: Store, _ kind: SecurityEventKind, _ detail: String = "") throws -> SecurityEvent {
        let event = try store.appendSecurityEvent(kind, detail, time: now)
        events.emit(.security(event))
        return event
    }

    static func loadAutoLock(_ store: Store) throws -> AutoLock {
        guard let ms = try store.setting(Node.autoLockSetting) else { return .standard }
        return ms < 0 ? .never : .after(seconds: Double(ms) / 1000)
    }

    static let autoLockSetting = "auto_lock_ms"
}

/// The keys an unlocked node holds, all in guarded memory. Dropping the last reference
/// wipes them (SecureBytes deinit → sodium_free).
final class UnlockedKeys: Sendable {
    let contents: VaultContents
    let identity: Identity
    let cipher: FieldCipher

    init(_ contents: VaultContents) throws {
        self.contents = contents
        identity = try Identity(name: contents.name, secrets: contents.identitySecrets)
        cipher = try FieldCipher(databaseKey: contents.databaseKey)
    }
}

/// Everything the node's lock protects.
struct NodeState {
    var store: Store?
    var keys: UnlockedKeys?
    var autoLock: AutoLock
    /// CLOCK_MONOTONIC nanoseconds of the last call that used the keys.
    var lastActivity: UInt64 = 0
    var autoLockTimer: EventLoop.TimerID?
    /// Bumped by reset, so an unlock that started before a reset cannot finish after it.
    var generation = 0
    /// The delivery engine: outbox, links, carriers, acks, retries, transports, presence
    /// (Delivery/DeliveryEngine.swift).
    var delivery: DeliveryEngine
    /// The app's device secret (setDeviceSecret), in guarded memory until cleared or closed.
    var deviceSecret: SecureBytes?
    /// Where the lock went, with `Options.lockStatistics` (Node.withState).
    var lockStatistics = NodeLockStatistics()

    init(store: Store, autoLock: AutoLock, delivery: DeliveryEngine) {
        self.store = store
        self.autoLock = autoLock
        self.delivery = delivery
    }

    /// Forgets the keys and the auto-lock timer. Returns whether the node was unlocked.
    @discardableResult
    mutating func dropKeys(loop: EventLoop) -> Bool {
        if let timer = autoLockTimer { loop.cancel(timer) }
        autoLockTimer = nil
        // The ack keys go with the identity; the link key stays, so links go on while locked.
        delivery.peers = nil
        // The carried tag table holds every contact's route pair key (PROTOCOL §10.3: kept
        // while unlocked); left here, a locked node's memory would give every pair's tags.
        delivery.carry.tags = nil
        store?.detach()
        defer { keys = nil }
        return keys != nil
    }
}

/// Delivers events to the app's handler on the event thread.
final class EventSink: Sendable {
    typealias Handler = @Sendable (NodeEvent) -> Void
    private let loop: EventLoop
    /// The handler in a box: a closure stored directly as a generic `Locked` value is
    /// re-abstracted on every inout access, each read-and-write-back wrapping it in one more
    /// thunk — the stack grew by a frame set per event until the process crashed.
    private final class Box: Sendable {
        let call: Handler
        init(_ call: @escaping Handler) { self.call = call }
    }
    private let handler = Locked<Box?>(nil)

    init(loop: EventLoop) { self.loop = loop }

    /// Each event goes to the handler registered when it was emitted, never to a later one:
    /// an event emitted before any registration is dropped, and one emitted before a
    /// replacement still reaches the handler it was meant for (which is released only after
    /// its last pending event). The call happens on the event thread, outside any node lock.
    func emit(_ event: NodeEvent) {
        guard let current = handler.withLock({ $0 }) else { return }
        loop.post { current.call(event) }
    }

    func setHandler(_ new: Handler?) {
        let old = handler.withLock { h -> Box? in
            defer { h = new.map(Box.init) }
            return h
        }
        // Release the old handler on the event thread, after any event it is handling
        // (a C registration's free_user_data runs then). If the loop has stopped, the
        // closure is dropped here, which releases it on this thread.
        if let old { loop.post { _ = old } }
    }
}
