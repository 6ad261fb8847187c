import Glibc
import YaOKSupport

/// The socket calls the LAN transport makes, one small wrapper each, named after its C
/// call. Every descriptor is non-blocking and close-on-exec. Failures become `YaOKError`s
/// whose message says what was being done and the system's reason; `EINTR` is retried.
enum Socket {
    /// What a non-blocking call did.
    enum IOResult: Equatable {
        case bytes(Int)
        case wouldBlock
        /// The peer closed its side (read returned 0).
        case endOfStream
        case failed(Int32)
    }

    static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }

    static func error(_ what: String, _ code: Int32 = errno) -> YaOKError {
        YaOKError(.internal, "\(what): \(reason(code))")
    }

    /// socket(2): AF_INET, SOCK_STREAM or SOCK_DGRAM, non-blocking, close-on-exec.
    static func open(stream: Bool) throws -> Int32 {
        let type = Int32((stream ? SOCK_STREAM : SOCK_DGRAM).rawValue)
            | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(AF_INET, type, 0)
        guard fd >= 0 else { throw error("Cannot open a \(stream ? "TCP" : "UDP") socket") }
        return fd
    }

    /// close(2). The descriptor must already be unregistered from the event loop.
    static func close(_ fd: Int32) {
        guard fd >= 0 else { return }
        _ = Glibc.close(fd)  // EINTR: on Linux the descriptor is released anyway
    }

    /// setsockopt(2) with an Int32 value.
    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) -> Bool {
        var v = value
        return setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    /// setsockopt(2) with a struct value.
    static func setOption<T: BitwiseCopyable>(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: T) -> Bool {
        withUnsafeBytes(of: value) { setsockopt(fd, level, name, $0.baseAddress, socklen_t($0.count)) == 0 }
    }

    /// TCP_NODELAY: units are small and latency matters more than segment count.
    static func setNoDelay(_ fd: Int32) {
        _ = setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// bind(2).
    static func bind(_ fd: Int32, _ endpoint: IPv4Endpoint) -> Int32? {
        var raw = endpoint.sockaddr
        let rc = withUnsafePointer(to: &raw) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return rc == 0 ? nil : errno
    }

    /// getsockname(2): the address a socket is bound to (the port the kernel chose for 0).
    static func localEndpoint(_ fd: Int32) -> IPv4Endpoint? {
        var raw = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &raw) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return rc == 0 ? IPv4Endpoint(raw) : nil
    }

    /// A listening TCP socket on `endpoint` (SO_REUSEADDR, so a restart does not wait for
    /// TIME_WAIT; it does not allow two listeners on one port).
    static func listen(on endpoint: IPv4Endpoint, backlog: Int32 = 128) throws -> Int32 {
        let fd = try open(stream: true)
        _ = setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        if let code = bind(fd, endpoint) {
            close(fd)
            let hint: String
            switch code {
            case EADDRINUSE: hint = "port \(endpoint.port) is already in use"
            case EADDRNOTAVAIL: hint = "\(endpoint.host) is not an address of this machine"
            case EACCES: hint = "port \(endpoint.port) needs privileges"
            default: hint = reason(code)
            }
            throw YaOKError(.invalidArgument, "Cannot listen on \(endpoint) for LAN peers: \(hint)")
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw error("Cannot listen on \(endpoint) for LAN peers", code)
        }
        return fd
    }

    enum AcceptResult {
        case accepted(fd: Int32, remote: IPv4Endpoint)
        /// Nobody is waiting (EAGAIN).
        case none
        case failed(Int32)
    }

    /// accept(2), then fcntl(2) for O_NONBLOCK and FD_CLOEXEC (Glibc's Swift module does
    /// not declare accept4, a GNU extension).
    static func accept(_ listener: Int32) -> AcceptResult {
        var raw = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        while true {
            let fd = withUnsafeMutablePointer(to: &raw) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.accept(listener, $0, &length)
                }
            }
            if fd >= 0 {
                let flags = fcntl(fd, F_GETFL)
                guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
                    // A blocking descriptor would stall the event thread: refuse it.
                    let code = errno
                    close(fd)
                    return .failed(code)
                }
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                return .accepted(fd: fd, remote: IPv4Endpoint(raw))
            }
            let code = errno
            if code == EINTR { continue }
            return code == EAGAIN || code == EWOULDBLOCK ? .none : .failed(code)
        }
    }

    /// Starts a non-blocking connect(2). Returns the descriptor; completion (or failure)
    /// shows as writability, then `pendingError` tells which.
    static func startConnect(to endpoint: IPv4Endpoint) throws -> Int32 {
        let fd = try open(stream: true)
        setNoDelay(fd)
        var raw = endpoint.sockaddr
        let rc = withUnsafePointer(to: &raw) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if rc == 0 || errno == EINPROGRESS || errno == EINTR { return fd }
        let code = errno
        close(fd)
        throw error("Cannot connect to \(endpoint)", code)
    }

    /// getsockopt(SO_ERROR): 0 once a non-blocking connect has succeeded.
    static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
        return value
    }

    /// recv(2) into `buffer`.
    static func receive(_ fd: Int32, into buffer: inout [UInt8]) -> IOResult {
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfStream }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            return .failed(code)
        }
    }

    /// send(2) with MSG_NOSIGNAL: a peer that has gone away is an EPIPE to handle, never a
    /// SIGPIPE that would kill the host process. Behaves like write(2) for `FrameWriter`.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return 0 }
        return Glibc.send(fd, base, bytes.count, Int32(MSG_NOSIGNAL))
    }

    /// recvfrom(2) of one datagram; nil when none is waiting (or on error).
    static func receiveDatagram(_ fd: Int32, into buffer: inout [UInt8]) -> (count: Int, from: IPv4Endpoint)? {
        var raw = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        while true {
            let n = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &raw) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(fd, bytes.baseAddress, bytes.count, Int32(MSG_TRUNC), $0, &length)
                    }
                }
            }
            if n >= 0 { return (n, IPv4Endpoint(raw)) }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// sendto(2) of one datagram. Returns errno on failure.
    static func sendDatagram(_ fd: Int32, _ bytes: [UInt8], to endpoint: IPv4Endpoint) -> Int32? {
        var raw = endpoint.sockaddr
        let n = bytes.withUnsafeBytes { data in
            withUnsafePointer(to: &raw) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, data.baseAddress, data.count, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        return n == bytes.count ? nil : (n < 0 ? errno : EMSGSIZE)
    }

    /// if_nametoindex(3); nil for an interface that does not exist.
    static func interfaceIndex(_ name: String) -> Int32? {
        let index = if_nametoindex(name)
        return index == 0 ? nil : Int32(index)
    }
}
