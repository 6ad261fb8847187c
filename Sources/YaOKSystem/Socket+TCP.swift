import Glibc

/// TCP over IPv4, as the LAN transport, the relay, its client and its load tool use it.
extension Socket {
    /// A listening TCP socket on `address` (SO_REUSEADDR, so a restart does not wait for
    /// TIME_WAIT; it does not allow two listeners on one port). On failure nothing stays
    /// open; `bindHint` words the usual reasons.
    package static func listenTCP(_ address: sockaddr_in, backlog: Int32) -> Result<Int32, Errno> {
        let fd: Int32
        switch open(domain: AF_INET, type: Int32(SOCK_STREAM.rawValue)) {
        case .success(let opened): fd = opened
        case .failure(let failure): return .failure(failure)
        }
        setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        if let failure = bind(fd, address) ?? listen(fd, backlog: backlog) {
            close(fd)
            return .failure(failure)
        }
        return .success(fd)
    }

    /// Why a TCP listener could not be bound, as a person would say it.
    package static func bindHint(_ failure: Errno, host: String, port: UInt16) -> String {
        switch failure.code {
        case EADDRINUSE: "port \(port) is already in use"
        case EADDRNOTAVAIL: "\(host) is not an address of this machine"
        case EACCES: "port \(port) needs privileges"
        default: failure.description
        }
    }

    /// accept(2) of a TCP connection, with TCP_NODELAY: units are small and latency
    /// matters more than segment count.
    package static func acceptTCP(_ listener: Int32) -> AcceptResult<sockaddr_in> {
        let result = accept(listener, as: sockaddr_in())
        if case .accepted(let fd, _) = result { setNoDelay(fd) }
        return result
    }

    /// Starts a non-blocking TCP connect (TCP_NODELAY) to `address`: the descriptor, whose
    /// writability then says the connect is done (`pendingError`: whether it worked).
    package static func connectTCP(_ address: sockaddr_in) -> Result<Int32, Errno> {
        let fd: Int32
        switch open(domain: AF_INET, type: Int32(SOCK_STREAM.rawValue)) {
        case .success(let opened): fd = opened
        case .failure(let failure): return .failure(failure)
        }
        setNoDelay(fd)
        if let failure = connect(fd, address) {
            close(fd)
            return .failure(failure)
        }
        return .success(fd)
    }

    /// TCP_NODELAY.
    package static func setNoDelay(_ fd: Int32) {
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// An IPv4 socket address; `address` in host byte order.
    package static func ipv4(address: UInt32, port: UInt16) -> sockaddr_in {
        var raw = sockaddr_in()
        raw.sin_family = sa_family_t(AF_INET)
        raw.sin_port = port.bigEndian
        raw.sin_addr = in_addr(s_addr: address.bigEndian)
        return raw
    }

    /// A dotted-quad IPv4 address ("localhost" too) in host byte order; nil for anything else.
    package static func parseIPv4(_ text: String) -> UInt32? {
        var raw = in_addr()
        guard inet_pton(AF_INET, text == "localhost" ? "127.0.0.1" : text, &raw) == 1 else { return nil }
        return UInt32(bigEndian: raw.s_addr)
    }
}
