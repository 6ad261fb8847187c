import Glibc
import YaOKSupport

/// The socket calls every transport and server of the package makes (TCP for the LAN, the
/// relay and its load tool, L2CAP for Bluetooth), one small wrapper each, named after its C
/// call. Descriptors are non-blocking and close-on-exec; `EINTR` is retried; sends never
/// raise SIGPIPE; errno is read inside each wrapper and returned (`Errno`). Addresses are
/// the kernel's own structs (`sockaddr_in`, `sockaddr_l2`), passed generically.
package enum Socket {
    /// "Connection refused" for an errno code.
    package static func reason(_ code: Int32) -> String { Errno.reason(code) }

    /// An error whose message says what was being done and the system's reason.
    package static func error(_ what: String, _ failure: Errno) -> YaOKError {
        YaOKError(.internal, "\(what): \(failure)")
    }

    /// socket(2), non-blocking and close-on-exec.
    package static func open(domain: Int32, type: Int32, protocol: Int32 = 0) -> Result<Int32, Errno> {
        let fd = socket(domain, type | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
        return fd >= 0 ? .success(fd) : .failure(.current)
    }

    /// close(2). The descriptor must already be unregistered from its event loop.
    package static func close(_ fd: Int32) {
        guard fd >= 0 else { return }
        _ = Glibc.close(fd)  // EINTR: on Linux the descriptor is released anyway
    }

    /// setsockopt(2) with an Int32 value.
    @discardableResult
    package static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) -> Errno? {
        var v = value
        return setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size)) == 0 ? nil : .current
    }

    /// setsockopt(2) with any plain value (a struct, a UInt16).
    @discardableResult
    package static func setOption<T: BitwiseCopyable>(_ fd: Int32, _ level: Int32, _ name: Int32, value: T) -> Errno? {
        withUnsafeBytes(of: value) { setsockopt(fd, level, name, $0.baseAddress, socklen_t($0.count)) == 0 ? nil : .current }
    }

    /// getsockopt(2) of a plain value; nil on failure.
    package static func option<T: BitwiseCopyable>(_ fd: Int32, _ level: Int32, _ name: Int32, as initial: T) -> T? {
        var value = initial
        var length = socklen_t(MemoryLayout<T>.size)
        return getsockopt(fd, level, name, &value, &length) == 0 ? value : nil
    }

    /// getsockopt(SO_ERROR): 0 once a non-blocking connect has succeeded, else why it failed.
    package static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
        return value
    }

    /// bind(2) to a kernel address struct.
    package static func bind<Address: BitwiseCopyable>(_ fd: Int32, _ address: Address) -> Errno? {
        withUnsafeBytes(of: address) { raw in
            Glibc.bind(fd, raw.baseAddress?.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count)) == 0 ? nil : .current
        }
    }

    /// listen(2).
    package static func listen(_ fd: Int32, backlog: Int32) -> Errno? {
        Glibc.listen(fd, backlog) == 0 ? nil : .current
    }

    /// Starts a non-blocking connect(2): nil once started (EINPROGRESS) or done; completion
    /// or failure shows as writability, then `pendingError` tells which.
    package static func connect<Address: BitwiseCopyable>(_ fd: Int32, _ address: Address) -> Errno? {
        let rc = withUnsafeBytes(of: address) { raw in
            Glibc.connect(fd, raw.baseAddress?.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard rc != 0 else { return nil }
        let failure = Errno.current
        return failure.code == EINPROGRESS || failure.code == EINTR ? nil : failure
    }

    /// getsockname(2) into `initial`'s type: the address a socket is bound to.
    package static func localAddress<Address: BitwiseCopyable>(_ fd: Int32, as initial: Address) -> Address? {
        var address = initial
        var length = socklen_t(MemoryLayout<Address>.size)
        let rc = withUnsafeMutableBytes(of: &address) { getsockname(fd, $0.baseAddress?.assumingMemoryBound(to: sockaddr.self), &length) }
        return rc == 0 ? address : nil
    }

    package enum AcceptResult<Address> {
        case accepted(fd: Int32, remote: Address)
        /// Nobody is waiting (EAGAIN).
        case none
        case failed(Errno)
    }

    /// accept(2) with the peer's address in `initial`'s type, then fcntl(2) for O_NONBLOCK
    /// and FD_CLOEXEC (Glibc's Swift module does not declare accept4, a GNU extension).
    package static func accept<Address: BitwiseCopyable>(_ listener: Int32, as initial: Address) -> AcceptResult<Address> {
        while true {
            var address = initial
            var length = socklen_t(MemoryLayout<Address>.size)
            let fd = withUnsafeMutableBytes(of: &address) {
                Glibc.accept(listener, $0.baseAddress?.assumingMemoryBound(to: sockaddr.self), &length)
            }
            if fd >= 0 {
                let flags = fcntl(fd, F_GETFL)
                guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
                    // A blocking descriptor would stall the event thread: refuse it.
                    let failure = Errno.current
                    close(fd)
                    return .failed(failure)
                }
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                return .accepted(fd: fd, remote: address)
            }
            let failure = Errno.current
            if failure.code == EINTR { continue }
            return failure.isWouldBlock ? .none : .failed(failure)
        }
    }

    /// recv(2) into `buffer` (one SDU on a packet socket).
    package static func receive(_ fd: Int32, into buffer: inout [UInt8]) -> IOResult {
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfStream }
            let failure = Errno.current
            if failure.code == EINTR { continue }
            return failure.isWouldBlock ? .wouldBlock : .failed(failure)
        }
    }

    /// send(2) with MSG_NOSIGNAL (a peer that has gone away is an EPIPE to handle, never a
    /// SIGPIPE that would kill the host process). On a packet socket: one SDU.
    package static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> IOResult {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return .bytes(0) }
        while true {
            let n = Glibc.send(fd, base, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            if n >= 0 { return .bytes(n) }
            let failure = Errno.current
            if failure.code == EINTR { continue }
            return failure.isWouldBlock ? .wouldBlock : .failed(failure)
        }
    }

    /// The most buffers one `send(_:buffers:)` passes (the kernel's UIO_MAXIOV).
    package static let maxBuffers = 1024

    /// sendmsg(2) of several buffers at once (gather, as writev(2), with MSG_NOSIGNAL): a
    /// connection's queued frames leave in one call, not one send(2) each. At most
    /// `maxBuffers` are passed; the caller sends the rest once these have gone.
    package static func send(_ fd: Int32, buffers: [UnsafeRawBufferPointer]) -> IOResult {
        var vectors = buffers.prefix(maxBuffers).map {
            iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)
        }
        guard !vectors.isEmpty else { return .bytes(0) }
        while true {
            let n = vectors.withUnsafeMutableBufferPointer { v -> Int in
                var message = msghdr()
                message.msg_iov = v.baseAddress
                message.msg_iovlen = v.count
                return sendmsg(fd, &message, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n >= 0 { return .bytes(n) }
            let failure = Errno.current
            if failure.code == EINTR { continue }
            return failure.isWouldBlock ? .wouldBlock : .failed(failure)
        }
    }

    /// write(2) of one whole packet (a Bluetooth mgmt command: the kernel takes it whole or
    /// not at all); nil when it went whole, else why not (EIO for a short write).
    package static func writePacket(_ fd: Int32, _ bytes: [UInt8]) -> Errno? {
        while true {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n == bytes.count { return nil }
            if n >= 0 { return Errno(EIO) }
            let failure = Errno.current
            if failure.code == EINTR { continue }
            return failure
        }
    }

    /// poll(2) for readability of one descriptor, up to `milliseconds`: true when readable
    /// (or hung up: a read then says what happened).
    package static func waitReadable(_ fd: Int32, milliseconds: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, milliseconds) > 0
    }

    /// recvfrom(2) of one datagram (MSG_TRUNC: the count is the datagram's whole length even
    /// when the buffer was shorter); nil when none is waiting or on error.
    package static func receiveDatagram<Address: BitwiseCopyable>(_ fd: Int32, into buffer: inout [UInt8],
                                                                 from initial: Address) -> (count: Int, from: Address)? {
        var address = initial
        var length = socklen_t(MemoryLayout<Address>.size)
        while true {
            let n = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutableBytes(of: &address) {
                    recvfrom(fd, bytes.baseAddress, bytes.count, Int32(MSG_TRUNC), $0.baseAddress?.assumingMemoryBound(to: sockaddr.self), &length)
                }
            }
            if n >= 0 { return (n, address) }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// sendto(2) of one datagram; nil when it went whole, else why not (EMSGSIZE: partly).
    package static func sendDatagram<Address: BitwiseCopyable>(_ fd: Int32, _ bytes: [UInt8], to address: Address) -> Errno? {
        let n = bytes.withUnsafeBytes { data in
            withUnsafeBytes(of: address) {
                sendto(fd, data.baseAddress, data.count, Int32(MSG_NOSIGNAL), $0.baseAddress?.assumingMemoryBound(to: sockaddr.self),
                       socklen_t($0.count))
            }
        }
        if n == bytes.count { return nil }
        return n < 0 ? .current : Errno(EMSGSIZE)
    }
}
