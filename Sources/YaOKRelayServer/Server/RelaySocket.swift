import Glibc
import YaOKSupport

/// The socket calls the relay makes, one small wrapper each, named after its C call
/// (as the LAN transport's `Socket`, which is internal to its target). Descriptors are
/// non-blocking and close-on-exec; `EINTR` is retried; sends never raise SIGPIPE.
enum RelaySocket {
    enum IOResult: Equatable {
        case bytes(Int)
        case wouldBlock
        case endOfStream
        case failed(Int32)
    }

    static func lastError() -> Int32 { errno }
    static func isWouldBlock(_ code: Int32) -> Bool { code == EAGAIN || code == EWOULDBLOCK }
    static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
    static func error(_ what: String, _ code: Int32) -> YaOKError { YaOKError(.internal, "\(what): \(reason(code))") }

    /// A listening TCP socket on an IPv4 address (SO_REUSEADDR for quick restarts).
    /// Returns the descriptor and the port bound (the kernel's choice for port 0).
    static func listen(host: String, port: UInt16, backlog: Int32 = 1024) throws -> (fd: Int32, port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1 else {
            throw YaOKError(.invalidArgument, "\(host) is not an IPv4 address")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw error("Cannot open a TCP socket", errno) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            Glibc.close(fd)
            let hint = code == EADDRINUSE ? "port \(port) is already in use"
                : code == EADDRNOTAVAIL ? "\(host) is not an address of this machine" : reason(code)
            throw YaOKError(.invalidArgument, "Cannot listen on \(host):\(port): \(hint)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: actual.sin_port))
    }

    enum AcceptResult {
        /// The descriptor and the peer's IPv4 address (host byte order).
        case accepted(Int32, UInt32)
        case none
        case failed(Int32)
    }

    /// accept(2), then O_NONBLOCK, FD_CLOEXEC and TCP_NODELAY (small frames; latency
    /// matters more than segment count).
    static func accept(_ listener: Int32) -> AcceptResult {
        while true {
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let fd = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
            }
            if fd >= 0 {
                let flags = fcntl(fd, F_GETFL)
                guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
                    let code = errno
                    Glibc.close(fd)
                    return .failed(code)
                }
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                var one: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return .accepted(fd, UInt32(bigEndian: peer.sin_addr.s_addr))
            }
            let code = errno
            if code == EINTR { continue }
            return isWouldBlock(code) ? .none : .failed(code)
        }
    }

    static func close(_ fd: Int32) {
        guard fd >= 0 else { return }
        _ = Glibc.close(fd)
    }

    static func receive(_ fd: Int32, into buffer: inout [UInt8]) -> IOResult {
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfStream }
            let code = errno
            if code == EINTR { continue }
            return isWouldBlock(code) ? .wouldBlock : .failed(code)
        }
    }

    /// send(2) with MSG_NOSIGNAL; -1 with errno set on failure, as write(2).
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return 0 }
        while true {
            let n = Glibc.send(fd, base, bytes.count, Int32(MSG_NOSIGNAL))
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }
}
