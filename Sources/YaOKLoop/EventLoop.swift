import Glibc
internal import CLinux
import YaOKSupport

/// One thread, one `epoll` set: the place where a node's timers fire, its file descriptors
/// (TCP, UDP, BLE L2CAP sockets, later) are serviced, and its event callbacks run.
///
/// Work reaches the thread in three ways: `post` (run soon), `schedule` (run after a delay)
/// and `register` (run when a file descriptor is ready). An `eventfd` in the epoll set
/// wakes the thread when it sleeps and another thread hands it work (or an earlier timer),
/// so `epoll_wait` can block with the next timer's deadline as its timeout and use no CPU
/// while idle. Work handed to a thread that is running, or that a wake-up is already on
/// its way to, writes nothing (`Sleep`): the thread looks at it before it sleeps again.
///
/// Thread safety: every method may be called from any thread, including from work running
/// on the loop itself. Work items run one at a time, in the order posted, never while the
/// loop's own lock is held (so they may call back into the loop).
///
/// Lifetime: the thread keeps the loop alive until `stop()`; the owner must call it.
public final class EventLoop: Sendable {
    public struct TimerID: Hashable, Sendable { let raw: UInt64 }

    /// What a file descriptor is ready for (EPOLLIN, EPOLLOUT, EPOLLHUP, EPOLLERR).
    public struct IOEvents: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let readable = IOEvents(rawValue: 1 << 0)
        public static let writable = IOEvents(rawValue: 1 << 1)
        public static let hangup = IOEvents(rawValue: 1 << 2)
        public static let error = IOEvents(rawValue: 1 << 3)
    }

    public typealias Work = @Sendable () -> Void
    public typealias IOHandler = @Sendable (IOEvents) -> Void

    private struct Timer {
        let deadline: UInt64  // CLOCK_MONOTONIC nanoseconds
        let sequence: UInt64  // ties fire in scheduling order
        let work: Work
    }

    private struct State {
        var posted: [Work] = []
        /// Work items accepted by `post` since the loop started (`postsAccepted`).
        var postCount = 0
        // A handful of timers per node (auto-lock, retransmit sweeps): a linear scan for
        // the earliest is cheaper than keeping a heap in order. Revisit if that changes.
        var timers: [UInt64: Timer] = [:]
        var nextID: UInt64 = 1
        var handlers: [Int32: IOHandler] = [:]
        var sleep = Sleep()
        var stopping = false
        var thread: pthread_t?
        var joined = false
    }

    /// Whether the loop thread needs the eventfd to notice new work.
    ///
    /// No lost wake-up: the thread sets `until` in the same locked section in which it
    /// finds nothing posted and takes the earliest timer as its timeout, and clears it only
    /// after `epoll_wait` returns. So work added before that section is seen by it (the
    /// timeout is 0, or the earlier deadline), and work added after it finds `until` set.
    /// A poster that finds `until` set writes the eventfd unless `pending` says that a
    /// write was promised since the thread set `until`: `pending` is cleared only with
    /// `until`, after `epoll_wait` returns, so a promised write is made after the thread
    /// chose to sleep and is read only after it woke; the eventfd stays readable until
    /// then, and `epoll_wait` returns at once or wakes. A write promised while the thread
    /// was awake cannot happen: a poster writes only when `until` is set. A write that lands
    /// after the thread woke for another reason makes one spurious turn, no more.
    private struct Sleep {
        /// The deadline (CLOCK_MONOTONIC ns; `.max`: none) the thread sleeps, or is about
        /// to sleep, towards; nil while it runs (or polls without blocking).
        var until: UInt64?
        /// An eventfd write was promised while the thread sleeps: it will wake.
        var pending = false
        /// Writes to the eventfd so far (`wakeUps`).
        var writes = 0

        /// Whether new work must write the eventfd: due at `deadline` (nil: at once).
        /// Promises the write when it must.
        mutating func needsWake(forWorkDue deadline: UInt64? = nil) -> Bool {
            guard let until, !pending else { return false }
            if let deadline, deadline >= until { return false }
            pending = true
            writes += 1
            return true
        }
    }

    private let state = Locked(State())
    private let epollFD: Int32
    private let wakeFD: Int32

    /// Starts the loop's thread.
    public init() throws {
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard ep >= 0 else { throw EventLoop.systemError("epoll_create1") }
        let wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wake >= 0 else {
            close(ep)
            throw EventLoop.systemError("eventfd")
        }
        epollFD = ep
        wakeFD = wake
        // From here on a throw runs deinit, which closes both descriptors.
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wake
        guard epoll_ctl(ep, EPOLL_CTL_ADD, wake, &event) == 0 else { throw EventLoop.systemError("epoll_ctl") }
        try startThread()
    }

    /// The descriptors stay open until the last reference goes (the thread holds one while
    /// it runs), not just until the thread ends: `stop()` and `schedule` still write to
    /// `wakeFD` after that, and a closed number may already belong to someone else's file.
    deinit {
        close(epollFD)
        close(wakeFD)
    }

    private func startThread() throws {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            let loop = Unmanaged<EventLoop>.fromOpaque(raw).takeRetainedValue()
            loop.run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<EventLoop>.fromOpaque(context).release()
            throw YaOKError(.internal, "Cannot start the event thread (pthread_create: \(rc))")
        }
        state.withLock { $0.thread = thread }
    }

    // MARK: - Handing work to the loop

    /// How many work items `post` accepted: each is a turn of the loop thread, so tests
    /// count them per operation (a send that queued nothing should post nothing).
    package var postsAccepted: Int { state.withLock { $0.postCount } }

    /// How many times the eventfd was written: each wakes the sleeping loop thread (a
    /// system call on each side, and the scheduler's latency before the work runs).
    package var wakeUps: Int { state.withLock { $0.sleep.writes } }

    /// Whether the loop thread sleeps, or is about to, with nothing posted (tests wait for it).
    package var isSleeping: Bool { state.withLock { $0.sleep.until != nil } }

    /// Runs `work` on the loop thread soon, after the work already posted.
    /// Ignored once the loop has stopped: then it returns false, so a caller whose work
    /// must happen (telling a link its connection is gone) can do it itself.
    @discardableResult
    public func post(_ work: @escaping Work) -> Bool {
        let (accepted, wakes) = state.withLock { s -> (Bool, Bool) in
            guard !s.stopping else { return (false, false) }
            s.posted.append(work)
            s.postCount += 1
            return (true, s.sleep.needsWake())
        }
        if wakes { wake() }
        return accepted
    }

    /// Runs `work` on the loop thread once `seconds` (≥ 0) have passed on the monotonic clock.
    @discardableResult
    public func schedule(after seconds: Double, _ work: @escaping Work) -> TimerID {
        let delay = UInt64(max(0, min(seconds, 1e9)) * 1e9)
        let deadline = EventLoop.monotonicNanoseconds() &+ delay
        let (id, wakes) = state.withLock { s -> (UInt64, Bool) in
            let id = s.nextID
            s.nextID += 1
            guard !s.stopping else { return (id, false) }
            s.timers[id] = Timer(deadline: deadline, sequence: id, work: work)
            return (id, s.sleep.needsWake(forWorkDue: deadline))
        }
        if wakes { wake() }
        return TimerID(raw: id)
    }

    /// Cancels a timer that has not fired yet; a no-op otherwise. Returns whether it was pending.
    @discardableResult
    public func cancel(_ timer: TimerID) -> Bool {
        state.withLock { $0.timers.removeValue(forKey: timer.raw) != nil }
    }

    /// Watches `fd` (level-triggered) and calls `handler` on the loop thread whenever it is
    /// ready for any of `events`; hang-ups and errors are always reported. The caller keeps
    /// owning `fd`: unregister it before closing it.
    public func register(fd: Int32, for events: IOEvents, handler: @escaping IOHandler) throws {
        guard fd >= 0 else { throw YaOKError(.invalidArgument, "Invalid file descriptor \(fd)") }
        var event = epoll_event()
        event.events = EventLoop.epollEvents(events)
        event.data.fd = fd
        try state.withLock { s in
            guard !s.stopping else { throw YaOKError(.internal, "The event loop has stopped") }
            guard s.handlers[fd] == nil else { throw YaOKError(.invalidArgument, "File descriptor \(fd) is already registered") }
            guard epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else { throw EventLoop.systemError("epoll_ctl") }
            s.handlers[fd] = handler
        }
    }

    /// Changes what a registered `fd` is watched for (epoll's EPOLL_CTL_MOD), keeping its
    /// handler: a connection watches writability only while bytes wait, and changing that
    /// must not open a window where the descriptor is watched by nothing.
    public func modify(fd: Int32, for events: IOEvents) throws {
        var event = epoll_event()
        event.events = EventLoop.epollEvents(events)
        event.data.fd = fd
        try state.withLock { s in
            guard !s.stopping else { throw YaOKError(.internal, "The event loop has stopped") }
            guard s.handlers[fd] != nil else { throw YaOKError(.invalidArgument, "File descriptor \(fd) is not registered") }
            guard epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event) == 0 else { throw EventLoop.systemError("epoll_ctl") }
        }
    }

    /// Stops watching `fd`. After this returns, its handler is not called again (if called
    /// from the loop thread) or at most once more already in progress (from another thread).
    public func unregister(fd: Int32) {
        state.withLock { s in
            guard s.handlers.removeValue(forKey: fd) != nil else { return }
            var unused = epoll_event()
            _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &unused)
        }
    }

    /// Whether the caller is running on this loop's thread.
    public var isLoopThread: Bool {
        state.withLock { s in s.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Stops the loop: work already posted still runs, pending timers are dropped, new work
    /// is ignored. From another thread it waits for the thread to finish; from the loop
    /// itself it returns at once and the thread ends after the current work item. Idempotent.
    public func stop() {
        // Exactly one caller ends the thread's life: it joins it, or detaches it when the
        // caller is the loop thread itself (a thread cannot join itself).
        enum Ending { case join(pthread_t), detach(pthread_t), none }
        let ending = state.withLock { s -> Ending in
            s.stopping = true
            s.timers.removeAll()
            s.sleep.writes += 1  // always: stopping is rare, and a thread may wait in join
            guard let thread = s.thread, !s.joined else { return .none }
            s.joined = true
            return pthread_equal(thread, pthread_self()) != 0 ? .detach(thread) : .join(thread)
        }
        wake()
        switch ending {
        case .join(let thread): pthread_join(thread, nil)
        case .detach(let thread): pthread_detach(thread)
        case .none: break
        }
    }

    // MARK: - The loop thread

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)  // EAGAIN means a wake-up is already pending: fine
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let timeout = state.withLock { s -> Int32? in
                if s.stopping && s.posted.isEmpty { return nil }
                guard !s.posted.isEmpty || !s.timers.isEmpty else {
                    s.sleep.until = .max
                    return -1
                }
                if !s.posted.isEmpty { return 0 }
                let earliest = s.timers.values.map(\.deadline).min() ?? 0
                let now = EventLoop.monotonicNanoseconds()
                guard earliest > now else { return 0 }
                s.sleep.until = earliest
                // Round up so that a timer never wakes us a little early and spins.
                return Int32(min((earliest - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            }
            guard let timeout else { break }
            let count = epoll_wait(epollFD, &events, Int32(events.count), timeout)
            if timeout != 0 {
                state.withLock { s in
                    s.sleep.until = nil
                    s.sleep.pending = false
                }
            }
            if count < 0 {
                if errno == EINTR { continue }
                break  // the epoll set is gone: nothing sensible left to do
            }
            for i in 0..<Int(count) { dispatch(events[i]) }
            runPosted()
            runDueTimers()
        }
    }

    private func dispatch(_ event: epoll_event) {
        let fd = event.data.fd
        if fd == wakeFD {
            var value: UInt64 = 0
            _ = read(wakeFD, &value, 8)
            return
        }
        // Looked up per event: an earlier handler in this batch may have unregistered it.
        guard let handler = state.withLock({ $0.handlers[fd] }) else { return }
        var ready: IOEvents = []
        if event.events & EPOLLIN.rawValue != 0 { ready.insert(.readable) }
        if event.events & EPOLLOUT.rawValue != 0 { ready.insert(.writable) }
        if event.events & (EPOLLHUP.rawValue | EPOLLRDHUP.rawValue) != 0 { ready.insert(.hangup) }
        if event.events & EPOLLERR.rawValue != 0 { ready.insert(.error) }
        handler(ready)
    }

    private func runPosted() {
        let work = state.withLock { s -> [Work] in
            defer { s.posted.removeAll() }
            return s.posted
        }
        for item in work { item() }
    }

    private func runDueTimers() {
        let now = EventLoop.monotonicNanoseconds()
        let due = state.withLock { s -> [Timer] in
            let due = s.timers.filter { $0.value.deadline <= now }
            for id in due.keys { s.timers.removeValue(forKey: id) }
            return due.values.sorted { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }
        }
        for timer in due { timer.work() }
    }

    // MARK: - Helpers

    package static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    private static func epollEvents(_ events: IOEvents) -> UInt32 {
        (events.contains(.readable) ? EPOLLIN.rawValue : 0) | (events.contains(.writable) ? EPOLLOUT.rawValue : 0)
    }

    private static func systemError(_ call: String) -> YaOKError {
        YaOKError(.internal, "\(call) failed: \(String(cString: strerror(errno)))")
    }
}
