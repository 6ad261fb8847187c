import Glibc
import YaOKSupport

/// A relay's address as a person types it: "host:port" (host a DNS name or an IPv4
/// address). Resolved to IPv4 off the event thread: getaddrinfo blocks.
public struct RelayAddress: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: UInt16

    /// `invalidArgument` with a readable message for anything but "host:port".
    public init(_ text: String) throws {
        guard !text.hasPrefix("[") else {
            throw YaOKError(.invalidArgument, "Relay addresses are IPv4 or host names for now (HOST:PORT); \(text) is IPv6")
        }
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port != 0,
              !text[..<colon].isEmpty, !text[..<colon].contains(":") else {
            throw YaOKError(.invalidArgument, "A relay address is HOST:PORT (e.g. relay.example.org:7443), got \"\(text)\"")
        }
        host = String(text[..<colon])
        self.port = port
    }

    public var description: String { "\(host):\(port)" }

    /// The IPv4 endpoint: at once for a dotted quad, else getaddrinfo (blocking).
    func resolve() throws -> IPv4Endpoint {
        if let address = IPv4Endpoint.parseAddress(host) { return IPv4Endpoint(address: address, port: port) }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &result)
        guard rc == 0, let first = result, let sa = first.pointee.ai_addr else {
            throw YaOKError(.relayUnavailable, "Cannot resolve the relay's name \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(result) }
        let raw = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
        return IPv4Endpoint(address: UInt32(bigEndian: raw.sin_addr.s_addr), port: port)
    }
}

/// Runs `work` on a new detached thread (name resolution, which blocks).
func detachThread(_ work: @escaping @Sendable () -> Void) {
    final class Box { let work: @Sendable () -> Void; init(_ w: @escaping @Sendable () -> Void) { work = w } }
    let box = Unmanaged.passRetained(Box(work)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { arg in
        Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue().work()
        return nil
    }, box)
    if rc == 0 {
        pthread_detach(thread)
    } else {
        Unmanaged<Box>.fromOpaque(box).takeRetainedValue().work()  // no thread: block instead
    }
}
