import Glibc
import YaOKSupport
import YaOKSystem

/// The shared socket calls (`YaOKSystem.Socket`) with the LAN transport's `IPv4Endpoint`s
/// and its error messages.
extension Socket {
    /// bind(2) to an endpoint.
    static func bind(_ fd: Int32, _ endpoint: IPv4Endpoint) -> Errno? {
        bind(fd, endpoint.sockaddr)
    }

    /// getsockname(2): the endpoint a socket is bound to (the port the kernel chose for 0).
    static func localEndpoint(_ fd: Int32) -> IPv4Endpoint? {
        localAddress(fd, as: sockaddr_in()).map(IPv4Endpoint.init)
    }

    /// A listening TCP socket on `endpoint` (`listenTCP`).
    static func listen(on endpoint: IPv4Endpoint, backlog: Int32 = 128) throws -> Int32 {
        switch listenTCP(endpoint.sockaddr, backlog: backlog) {
        case .success(let fd):
            return fd
        case .failure(let failure):
            throw YaOKError(.invalidArgument, "Cannot listen on \(endpoint) for LAN peers: "
                            + bindHint(failure, host: endpoint.host, port: endpoint.port))
        }
    }

    /// Starts a non-blocking TCP connect (`connectTCP`).
    static func startConnect(to endpoint: IPv4Endpoint) throws -> Int32 {
        switch connectTCP(endpoint.sockaddr) {
        case .success(let fd): return fd
        case .failure(let failure): throw error("Cannot connect to \(endpoint)", failure)
        }
    }

    /// recvfrom(2) of one datagram; nil when none is waiting (or on error).
    static func receiveDatagram(_ fd: Int32, into buffer: inout [UInt8]) -> (count: Int, from: IPv4Endpoint)? {
        receiveDatagram(fd, into: &buffer, from: sockaddr_in()).map { ($0.count, IPv4Endpoint($0.from)) }
    }

    /// sendto(2) of one datagram. Returns why it failed, if it did.
    static func sendDatagram(_ fd: Int32, _ bytes: [UInt8], to endpoint: IPv4Endpoint) -> Errno? {
        sendDatagram(fd, bytes, to: endpoint.sockaddr)
    }

    /// if_nametoindex(3); nil for an interface that does not exist.
    static func interfaceIndex(_ name: String) -> Int32? {
        let index = if_nametoindex(name)
        return index == 0 ? nil : Int32(index)
    }
}
