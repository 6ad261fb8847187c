import Foundation
import Glibc

/// A plain TCP client on 127.0.0.1 for feeding a transport hostile bytes.
final class RawClient {
    let fd: Int32

    /// Connects (blocking) to 127.0.0.1:`port`, from `source` (another loopback address,
    /// 127.0.0.2 say, to pose as a second host) if given.
    init(port: UInt16, from source: UInt32? = nil) throws {
        fd = try RawClient.socketTo(port: port, blocking: true, source: source)
    }

    /// Starts a non-blocking connect and returns at once (for floods of connections).
    init(startingConnectTo port: UInt16) throws {
        fd = try RawClient.socketTo(port: port, blocking: false)
    }

    deinit { close(fd) }

    private static func socketTo(port: UInt16, blocking: Bool, source: UInt32? = nil) throws -> Int32 {
        let type = Int32(SOCK_STREAM.rawValue) | (blocking ? 0 : Int32(SOCK_NONBLOCK.rawValue)) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(AF_INET, type, 0)
        guard fd >= 0 else { throw RawError("socket: \(String(cString: strerror(errno)))") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr = in_addr(s_addr: source.bigEndian)
            let rc = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard rc == 0 else {
                let message = String(cString: strerror(errno))
                close(fd)
                throw RawError("bind: \(message)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 || (!blocking && errno == EINPROGRESS) else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw RawError("connect: \(message)")
        }
        return fd
    }

    /// Writes everything (blocking); false if the connection is gone.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// Whether the other side has closed: waits up to `timeout` seconds for EOF or a reset,
    /// discarding whatever arrives before it.
    func waitForClose(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            guard poll(&p, 1, ms) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n == 0 { return true }
            if n < 0 && errno != EAGAIN && errno != EINTR { return true }
        }
        return false
    }

    /// Reads what arrives within `timeout` seconds, up to `count` bytes.
    func read(count: Int, timeout: Double) -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while out.count < count && Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            guard poll(&p, 1, ms) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, count - out.count), Int32(MSG_DONTWAIT)) }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    /// Shrinks the receive buffer, so that a transport writing to us fills it quickly.
    func shrinkReceiveBuffer() {
        var size: Int32 = 4096
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
}

struct RawError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Raises the soft limit on open files to the hard limit; returns the limit now in force.
func raiseOpenFileLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }
    return Int(clamping: limit.rlim_cur)
}

/// Two free UDP ports on 127.0.0.1 (bound, read, released: a small race, fine in tests).
func freeUDPPorts(_ count: Int) -> [UInt16] {
    var fds: [Int32] = []
    var ports: [UInt16] = []
    for _ in 0..<count {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                _ = bind(fd, p, length)
                _ = getsockname(fd, p, &length)
            }
        }
        ports.append(UInt16(bigEndian: address.sin_port))
        fds.append(fd)
    }
    for fd in fds { close(fd) }
    return ports
}

/// Sends one UDP datagram to 127.0.0.1:`port`.
func sendDatagram(_ bytes: [UInt8], toPort port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
    _ = bytes.withUnsafeBytes { data in
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, data.baseAddress, data.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}
