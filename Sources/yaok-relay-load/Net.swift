import Glibc
import CLinux
import YaOKSystem

/// The clock the load tool measures with (its sockets are `YaOKSystem.Socket`'s).
enum Clock {
    /// CLOCK_MONOTONIC in nanoseconds.
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Wall-clock milliseconds since the Unix epoch (routed headers' creation time).
    static func wallMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

/// SplitMix64: fast, seedable, for choosing recipients and filling payloads (none of this
/// needs to be secret; message IDs come from the system CSPRNG).
struct FastRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// FNV-1a over a packet: detects a DELIVER whose bytes differ from what was posted.
func checksum(_ bytes: [UInt8]) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
    return h
}

/// A thin epoll set: each descriptor carries a 64-bit token (the client's index).
final class Poller {
    let fd: Int32
    private var events: [epoll_event]

    init(capacity: Int = 1024) {
        fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(fd >= 0, "epoll_create1 failed: \(Socket.reason(errno))")
        events = [epoll_event](repeating: epoll_event(), count: capacity)
    }

    /// Edge-triggered read and write readiness (the owner drains both on every event).
    func add(_ descriptor: Int32, token: UInt64) -> Bool {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLET.rawValue | EPOLLRDHUP.rawValue
        event.data.u64 = token
        return epoll_ctl(fd, EPOLL_CTL_ADD, descriptor, &event) == 0
    }

    func remove(_ descriptor: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(fd, EPOLL_CTL_DEL, descriptor, &event)
    }

    /// Waits up to `timeoutMs` and calls `handle` with each ready token.
    func wait(timeoutMs: Int32, _ handle: (UInt64) -> Void) {
        let count = events.withUnsafeMutableBufferPointer { epoll_wait(fd, $0.baseAddress, Int32($0.count), timeoutMs) }
        guard count > 0 else { return }
        for i in 0..<Int(count) { handle(events[i].data.u64) }
    }
}
