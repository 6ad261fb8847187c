import Glibc
import CLinux

/// The few socket and clock calls the load tool needs, on plain Glibc (the LAN transport's
/// helpers are internal to YaOKTransports).
enum Net {
    /// A non-blocking TCP connect to an IPv4 address with TCP_NODELAY. Returns the
    /// descriptor (the connect is usually still in progress: wait for writability, then
    /// check `pendingError`) or an errno.
    static func connect(host: in_addr_t, port: UInt16) -> (fd: Int32, errno: Int32) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return (-1, errno) }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = host
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if rc == 0 || errno == EINPROGRESS { return (fd, 0) }
        let code = errno
        close(fd)
        return (-1, code)
    }

    /// SO_ERROR of a socket whose connect was in progress (0: connected).
    static func pendingError(_ fd: Int32) -> Int32 {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return errno }
        return code
    }

    static func parseIPv4(_ text: String) -> in_addr_t? {
        var address = in_addr()
        let name = text == "localhost" ? "127.0.0.1" : text
        guard inet_pton(AF_INET, name, &address) == 1 else { return nil }
        return address.s_addr
    }

    static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }
}

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
        precondition(fd >= 0, "epoll_create1 failed: \(Net.errorText(errno))")
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
