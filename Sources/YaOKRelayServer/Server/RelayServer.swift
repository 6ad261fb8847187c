import Glibc
import YaOKSupport
import YaOKSystem
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The relay server (docs/PROTOCOL.md §8): TLS connections on one event loop thread (the
/// node's `EventLoop`), the store on one disk thread with group commit (`DiskThread`).
///
/// Threads: every property below `// Loop-confined` is touched only on the loop thread
/// (work reaches it through `loop.post`), which is why the class can be `@unchecked
/// Sendable`. The disk thread shares only `counters` (locked) and its own queue.
public final class RelayServer: @unchecked Sendable {
    public let configuration: RelayConfiguration
    /// The port listened on (the kernel's choice when 0 was asked for).
    public let port: UInt16
    let loop: EventLoop
    let security: RelaySecurity
    let store: RelayStore
    /// The relay as a carrier (§12.9), nil when it has no carry storage.
    let carry: RelayCarryThread?
    /// Stated in every CHALLENGE (§8.2); kept in the store, so a cluster states one.
    public let relayIdentifier: [UInt8]
    var disk: DiskThread!
    let counters: Locked<RelayCounters>
    /// Other relays' writes to a shared store (PostgreSQL LISTEN), nil for SQLite.
    var watch: RelayStoreWatch?

    // Loop-confined.
    var listener: Int32
    var listenerPaused = false
    var accepting = true
    var connections: [UInt64: RelayConnection] = [:]
    /// Open connections per client IPv4 address (§8.4: one address cannot take them all).
    var connectionsByAddress: [UInt32: Int] = [:]
    /// Of those, the ones not yet READY.
    var pendingByAddress: [UInt32: Int] = [:]
    /// Open connections per /24, and each address's connections (`RelayServer+Slots`).
    var connectionsByPrefix: [UInt32: Int] = [:]
    var idsByAddress: [UInt32: Set<UInt64>] = [:]
    /// The connection caps in force (clamped to the descriptor limit at start).
    public let caps: RelayCaps
    /// A descriptor held in reserve: closed for a moment when accept(2) runs out of them.
    var reserveDescriptor: Int32 = -1
    /// Connections closed to make room for a newcomer (for tests and stats).
    var evictedConnections = 0
    /// `evicted` as saved by earlier runs (the counter is a total across restarts).
    var evictedBase: Int64 = 0
    /// `forgotten_deletes` as saved by earlier runs (a total too).
    var forgottenBase: Int64 = 0
    var subscribers = SubscriberIndex()
    /// Subscriptions per client address and in all (`RelayServer+Subscriptions`).
    var subscriptionsByAddress: [UInt32: Int] = [:]
    var subscriptionsByPrefix: [UInt32: Int] = [:]
    /// Sessions closed to make room for another /24's subscriptions (for tests).
    var evictedForSubscriptions = 0
    var totalSubscriptions = 0
    /// The SUBSCRIBE signature budget of the loop thread, all connections together
    /// (`verificationsPerWindow` per `verificationWindowSeconds`, bursts of
    /// `verificationsPerWindow`), its clock (tests stop it), and the checks so far.
    lazy var verificationBudget = TokenBucket(
        rate: Double(configuration.verificationsPerWindow) / configuration.verificationWindowSeconds,
        burst: Double(configuration.verificationsPerWindow), now: verificationClock())
    var verificationClock: () -> UInt64 = { EventLoop.monotonicNanoseconds() }
    var verificationsChecked = 0
    /// Reads put off for the signature budget (for tests).
    var deferredReads = 0
    var sessionsByPseudonym: [[UInt8]: Set<UInt64>] = [:]
    var revoked: Set<[UInt8]>
    let limiter: RateLimiter
    /// The same limits times `addressRateMultiplier`, per client IPv4 address.
    let addressLimiter: RateLimiter
    /// Bytes posted per client IPv4 address per rolling hour.
    let addressBytes: ByteRateLimiter
    /// Bytes of the packets stored (loaded at start, then kept from the disk's outcomes),
    /// and of the POSTs at the disk: together they are held under `maxStoredBytes`.
    var storedBytes = 0
    var pendingPostBytes = 0
    /// The free-space check of the data directory: when it last ran, and whether the
    /// space was below `minFreeDiskBytes`.
    var lastDiskCheck: UInt64?
    var diskLow = false
    var nextID: UInt64 = 1
    var nextToken: UInt64 = 1
    /// POSTs at the disk: token → who asked, and the rate-limit slot to give back if it
    /// is not stored.
    var pendingPosts: [UInt64: (connection: UInt64, post: RelaySession.Post, pseudonym: [UInt8], address: [UInt8])] = [:]
    /// Backlog reads at the disk: token → connection.
    var pendingReads: [UInt64: UInt64] = [:]
    /// DELETEs at the disk: token → connection and how many refs (backpressure).
    var pendingDeletes: [UInt64: (connection: UInt64, refs: Int)] = [:]
    /// Refs of all `pendingDeletes`, and the most there have been (for tests).
    var pendingDeleteRefs = 0
    var peakPendingDeleteRefs = 0
    /// DELETE refs the store did not take, to be tried again (`RelayServer+DeleteRetry`);
    /// the retry at the disk, if one is; when the last one failed; refs forgotten past the cap.
    var retainedDeletes: [StoredPacketRef] = []
    var deleteRetryToken: UInt64?
    var lastDeleteFailure: UInt64 = 0
    var forgottenDeleteRefs = 0
    /// DELETE refs taken from sessions, and those of them ignored because the session
    /// was never delivered them (for tests and stats).
    var deleteRefsTaken = 0
    var ignoredDeleteRefs = 0
    /// Per client address, its DELETE budget and when it was taken (only addresses below
    /// a full burst; `RelayServer+DeleteBudget`).
    var addressDeleteBudgets: [UInt32: (budget: Double, at: UInt64)] = [:]
    /// Per client address, its connections with parked DELETE refs in the order they are
    /// served, and the addresses whose refill timer is set (`RelayServer+DeleteBudget`).
    var deleteBudgetQueues: [UInt32: ConnectionQueue] = [:]
    var deleteBudgetTimers: Set<UInt32> = []
    /// How often a queue's timer has fired (for tests: waiting connections do not spin it).
    var deleteQueueWakes = 0
    /// The DELETE budgets' clock (tests set their own to run simulated seconds).
    var deleteBudgetClock: () -> UInt64 = { EventLoop.monotonicNanoseconds() }
    /// Parked DELETE refs of all connections, and the most there have been (for tests).
    var parkedDeleteRefs = 0
    var peakParkedDeleteRefs = 0
    var lastPrune: UInt64 = 0
    var lastTop: UInt64 = 0
    var stopped = false
    /// The most CARRY frames one connection had waiting for the carry thread (for tests).
    var peakPendingCarry = 0
    /// Connections refused for the cap (for tests).
    var refusedConnections = 0

    /// Binds `host:port`, then as `init(configuration:store:security:listener:)`.
    public convenience init(configuration: RelayConfiguration, store: RelayStore, security: RelaySecurity,
                            host: String, port: UInt16, carry: RelayCarryStorage? = nil) throws {
        try self.init(configuration: configuration, store: store, security: security,
                      listener: RelayListener(host: host, port: port), carry: carry)
    }

    /// Takes the listening socket, loads revocations, counters and the stored bytes, starts
    /// the disk thread and the loop. SIGPIPE is ignored from here on: a peer gone
    /// mid-write must not kill the relay (TLS writes go through write(2), which has no
    /// MSG_NOSIGNAL).
    public init(configuration: RelayConfiguration, store: RelayStore, security: RelaySecurity,
                listener bound: RelayListener, carry storage: RelayCarryStorage? = nil) throws {
        let fd = bound.take()
        signal(SIGPIPE, SIG_IGN)
        self.configuration = configuration
        self.store = store
        self.security = security
        limiter = RateLimiter(messagesPerHour: configuration.ratePerHour, acksPerHour: configuration.ackRatePerHour)
        addressLimiter = RateLimiter(messagesPerHour: configuration.ratePerHour * configuration.addressRateMultiplier,
                                     acksPerHour: configuration.ackRatePerHour * configuration.addressRateMultiplier)
        addressBytes = ByteRateLimiter(bytesPerHour: configuration.addressBytesPerHour,
                                       prefixBytesPerHour: configuration.prefixBytesPerHour)
        listener = fd
        port = bound.port
        caps = Self.caps(configuration, descriptorLimit: Self.raiseDescriptorLimit())
        let reserve = open("/dev/null", O_RDONLY | O_CLOEXEC)
        reserveDescriptor = reserve
        // Until every stored property is set, a throw does not run deinit: the two
        // descriptors are closed here. After that deinit closes them, and only deinit.
        do {
            carry = try storage.map {
                try RelayCarryThread(storage: $0, policy: CarryPolicy(
                    maxPackets: configuration.carryMaxPackets, maxBytes: configuration.carryMaxBytes,
                    depositorPacketsPerHour: configuration.carryPacketsPerHour,
                    depositorBytesPerHour: configuration.carryBytesPerHour),
                    handedBytesPerAddressPerHour: configuration.carryHandedBytesPerHour)
            }
            relayIdentifier = try store.relayIdentifier()
            revoked = try store.revokedPseudonyms()
            storedBytes = try store.storedBytes()
            var saved = try store.loadCounters()
            saved.connected = 0
            saved.retainedDeletes = 0
            saved.parkedDeletes = 0
            evictedBase = saved.evicted
            forgottenBase = saved.forgottenDeletes
            counters = Locked(saved)
        } catch {
            Socket.close(fd)
            Socket.close(reserve)
            throw error
        }
        do {
            loop = try EventLoop()
        } catch {
            Socket.close(fd)
            Socket.close(reserve)
            throw error
        }
        let counters = self.counters
        disk = DiskThread(store: store, configuration: configuration, counters: { counters.withLock { $0 } },
                          deliver: { [weak self] round in
                              guard let self else { return }
                              self.loop.post { self.apply(round) }
                          })
        do {
            try disk.start()
            try loop.register(fd: fd, for: .readable) { [weak self] _ in self?.acceptReady() }
            watch = try store.watch { [weak self] change in
                guard let self else { return }
                self.loop.post { self.storeChanged(change) }
            }
        } catch {
            watch?.stop()
            disk.stop()
            loop.stop()
            throw error  // deinit closes the listener
        }
        loop.schedule(after: configuration.tickSeconds) { [weak self] in self?.tick() }
    }

    /// A snapshot of the counters (`connected` is live).
    public var statistics: RelayCounters { counters.withLock { $0 } }

    /// The shared database's state (nil for SQLite): reachable, the last error, outages.
    public var storageHealth: RelayStoreHealth? { store.health }

    /// Rounds the disk thread has committed (each one transaction, however many writes).
    public var commitCount: Int { disk.commits.withLock { $0 } }

    /// Stops the relay: no more connections or frames are taken, the commit in progress and
    /// what is queued are finished (their ACCEPTEDs still go out, best effort), each session
    /// ends with ERROR unavailable, and the threads end. Idempotent; not from the loop thread.
    public func stop() {
        let first = onLoop { () -> Bool in
            guard !self.stopped else { return false }
            self.stopped = true
            self.accepting = false
            self.closeListener()
            for c in self.connections.values { self.updateInterest(c) }  // `stopped`: no more reading
            return true
        } ?? false
        guard first else { return }
        watch?.stop()
        disk.stop()  // its last round is posted to the loop before this returns
        _ = onLoop {
            for c in Array(self.connections.values) {
                if c.session != nil && !c.isClosing {
                    self.endSession(c, RelayErrorFrame(request: 0, code: .unavailable, message: "The relay is shutting down"))
                }
                self.flush(c)
            }
        }
        // A moment for the last frames to leave, then everything closes.
        let deadline = EventLoop.monotonicNanoseconds() + 500_000_000
        while EventLoop.monotonicNanoseconds() < deadline,
              onLoop({ self.connections.values.contains { !$0.output.isEmpty } }) ?? false {
            usleep(10_000)
        }
        _ = onLoop { for c in Array(self.connections.values) { self.finish(c, "relay stopped") } }
        loop.stop()
        // The disk thread has ended: this thread may use the store. Saved at time 0, so
        // that `stats` shows the relay as stopped rather than wait for the counters to age.
        var last = statistics
        last.connected = 0
        try? store.saveCounters(last, nowMs: 0)
        store.close()
        carry?.stop()
    }

    deinit {
        if listener >= 0 { Socket.close(listener) }
        Socket.close(reserveDescriptor)
    }
}

/// A listening TCP socket on an IPv4 address, bound before anything else is made (the
/// data directory, the certificate), so that a bad address or a port in use fails first.
/// `RelayServer` takes it over; until then it is closed when released.
public final class RelayListener: @unchecked Sendable {
    private var fd: Int32
    /// The port bound (the kernel's choice when 0 was asked for).
    public let port: UInt16

    /// Throws `invalidArgument` with what failed: not an IPv4 address, the port in use,
    /// an address this machine does not have.
    public init(host: String, port: UInt16) throws {
        guard let address = Socket.parseIPv4(host) else { throw YaOKError(.invalidArgument, "\(host) is not an IPv4 address") }
        switch Socket.listenTCP(Socket.ipv4(address: address, port: port), backlog: 1024) {
        case .success(let listener):
            fd = listener
            self.port = Socket.localAddress(listener, as: sockaddr_in()).map { UInt16(bigEndian: $0.sin_port) } ?? port
        case .failure(let failure):
            throw YaOKError(.invalidArgument, "Cannot listen on \(host):\(port): \(Socket.bindHint(failure, host: host, port: port))")
        }
    }

    func take() -> Int32 {
        defer { fd = -1 }
        return fd
    }

    deinit { Socket.close(fd) }
}

extension RelayServer {

    /// Runs `body` on the loop thread and waits for its result (nil if the loop has stopped).
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T? {
        let result = Locked<T?>(nil)
        let done = Locked(false)
        loop.post {
            result.withLock { $0 = body() }
            done.withLock { $0 = true }
        }
        let deadline = EventLoop.monotonicNanoseconds() + 5_000_000_000
        while !done.withLock({ $0 }) && EventLoop.monotonicNanoseconds() < deadline { usleep(1000) }
        return result.withLock { $0 }
    }

    // MARK: - Accepting

    func acceptReady() {
        guard accepting, listener >= 0, !listenerPaused else { return }
        let now = EventLoop.monotonicNanoseconds()
        // A bounded batch per wake-up, so a flood of connections cannot starve the others.
        for _ in 0..<64 {
            switch Socket.acceptTCP(listener) {
            case .none:
                return
            case .failed(let failure):
                let code = failure.code
                if (code == EMFILE || code == ENFILE) && shedWithReserve() { continue }
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    // Out of descriptors: the connection stays queued and the level-triggered
                    // listener would wake us at once, forever. Rest a second.
                    pauseListener()
                    return
                }
            case .accepted(let fd, let peer):
                let address = UInt32(bigEndian: peer.sin_addr.s_addr)
                guard admit(address) else {
                    Socket.close(fd)
                    refusedConnections += 1
                    continue
                }
                let id = nextID
                nextID += 1
                do {
                    let c = try RelayConnection(id: id, fd: fd, now: now)
                    c.address = address
                    countSlot(c)
                    pendingByAddress[address, default: 0] += 1
                    c.countedPending = true
                    try loop.register(fd: fd, for: .readable) { [weak self] events in self?.ready(id, events) }
                    connections[id] = c
                    if !security.clientSpeaksFirst { loop.post { [weak self] in self?.ready(id, []) } }
                } catch {
                    Socket.close(fd)
                }
            }
        }
        counters.withLock { $0.connected = Int64(connections.count) }
    }

    /// The connection is READY or gone: it no longer counts as pending for its address.
    func uncountPending(_ c: RelayConnection) {
        guard c.countedPending else { return }
        c.countedPending = false
        if let count = pendingByAddress[c.address] {
            pendingByAddress[c.address] = count > 1 ? count - 1 : nil
        }
    }

    private func pauseListener() {
        loop.unregister(fd: listener)
        listenerPaused = true
        loop.schedule(after: 1) { [weak self] in
            guard let self, self.listenerPaused, self.listener >= 0, self.accepting else { return }
            self.listenerPaused = false
            try? self.loop.register(fd: self.listener, for: .readable) { [weak self] _ in self?.acceptReady() }
        }
    }

    private func closeListener() {
        guard listener >= 0 else { return }
        loop.unregister(fd: listener)
        Socket.close(listener)
        listener = -1
    }

    // MARK: - The tick

    /// Timeouts, session lifetimes, backlog reads that waited, and counters.
    func tick() {
        let now = EventLoop.monotonicNanoseconds()
        let c = configuration
        for conn in Array(connections.values) {
            if let deadline = conn.closingDeadline {
                if now >= deadline { finish(conn, "closing timed out") }
                continue
            }
            let ready = conn.session?.phase == .ready
            if !ready, now &- conn.acceptedAt >= Self.nanoseconds(c.handshakeTimeoutSeconds) {
                if conn.session != nil {
                    endSession(conn, RelayErrorFrame(request: 0, code: .authFailed, message: "No AUTH within \(Int(c.handshakeTimeoutSeconds)) s"))
                    counters.withLock { $0.rejected += 1 }
                } else {
                    finish(conn, "no TLS handshake in time")
                }
            } else if now &- conn.lastReceived >= Self.nanoseconds(c.idleTimeoutSeconds) {
                finish(conn, "idle")
            } else if isIdleSession(conn, now: now) {
                endSession(conn, RelayErrorFrame(request: 0, code: .unavailable,
                                                 message: "No SUBSCRIBE or POST within \(Int(c.activityGraceSeconds)) s of READY"))
            } else if let readyAt = conn.readyAt, now &- readyAt >= Self.nanoseconds(c.sessionLifetimeSeconds) {
                endSession(conn, RelayErrorFrame(request: 0, code: .sessionExpired, message: "Session expired: log in again"))
            } else if !conn.needsRead.isEmpty {
                pump(conn)
            }
        }
        retryDeletes()
        compactSubscriptionIndex()
        if now &- lastPrune >= 60_000_000_000 {
            lastPrune = now
            limiter.prune(nowMs: Clock.milliseconds())
            pruneDeleteBudgets(now: now)
            addressLimiter.prune(nowMs: Clock.milliseconds())
            addressBytes.prune(nowMs: Clock.milliseconds())
        }
        if now &- lastTop >= 1_000_000_000 {
            lastTop = now
            let top = limiter.top(c.topPostersKept, nowMs: Clock.milliseconds())
                .map { RelayTopPoster(pseudonym: $0.key, posts: Int64($0.count)) }
            counters.withLock { $0.topPosters = top }
        }
        let outages = store.health?.outages ?? 0
        let caps = self.caps
        let evicted = Int64(evictedConnections), retained = Int64(retainedDeletes.count)
        let forgotten = Int64(forgottenDeleteRefs), parked = Int64(parkedDeleteRefs)
        counters.withLock {
            $0.connected = Int64(connections.count)
            $0.databaseOutages = outages
            $0.capConnections = Int64(caps.connections)
            $0.capPerAddress = Int64(caps.perAddress)
            $0.capPerPrefix = Int64(caps.perPrefix)
            $0.descriptorLimit = Int64(clamping: caps.descriptorLimit)
            $0.evicted = evictedBase + evicted
            $0.forgottenDeletes = forgottenBase + forgotten
            $0.retainedDeletes = retained
            $0.parkedDeletes = parked
        }
        loop.schedule(after: c.tickSeconds) { [weak self] in self?.tick() }
    }

    static func nanoseconds(_ seconds: Double) -> UInt64 { UInt64(max(0, seconds) * 1e9) }
}
