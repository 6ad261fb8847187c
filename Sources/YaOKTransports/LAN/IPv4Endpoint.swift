import Glibc
import YaOKSupport

/// An IPv4 address and port: a listening socket, a static peer, a discovered peer.
/// `address` is in host byte order; `sockaddr` converts to and from the kernel's form.
struct IPv4Endpoint: Hashable, Sendable, CustomStringConvertible {
    var address: UInt32
    var port: UInt16

    init(address: UInt32, port: UInt16) {
        self.address = address
        self.port = port
    }

    init(_ raw: sockaddr_in) {
        address = UInt32(bigEndian: raw.sin_addr.s_addr)
        port = UInt16(bigEndian: raw.sin_port)
    }

    var sockaddr: sockaddr_in {
        var raw = sockaddr_in()
        raw.sin_family = sa_family_t(AF_INET)
        raw.sin_port = port.bigEndian
        raw.sin_addr = in_addr(s_addr: address.bigEndian)
        return raw
    }

    /// Dotted quad: "10.99.0.1".
    var host: String { IPv4Endpoint.format(address) }
    /// "10.99.0.1:47475".
    var description: String { "\(host):\(port)" }

    var isMulticast: Bool { address >> 28 == 0xE }  // 224.0.0.0/4

    static func format(_ address: UInt32) -> String {
        "\(address >> 24).\(address >> 16 & 0xff).\(address >> 8 & 0xff).\(address & 0xff)"
    }

    /// A dotted-quad IPv4 address (inet_pton); nil for anything else.
    static func parseAddress(_ text: String) -> UInt32? {
        var raw = in_addr()
        guard inet_pton(AF_INET, text, &raw) == 1 else { return nil }
        return UInt32(bigEndian: raw.s_addr)
    }

    /// "host:port" with a dotted-quad host or a name (resolved with getaddrinfo, IPv4 only:
    /// it may block, so call it from `start`, never on the event thread) and a port 1...65535.
    static func resolve(_ text: String) throws -> IPv4Endpoint {
        guard let colon = text.lastIndex(of: ":") else {
            throw YaOKError(.invalidArgument, "LAN peer address \"\(text)\" is not host:port")
        }
        let host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard !host.isEmpty, let port = UInt16(portText), port != 0 else {
            throw YaOKError(.invalidArgument, "LAN peer address \"\(text)\" is not host:port (port 1-65535)")
        }
        if let address = parseAddress(host) { return IPv4Endpoint(address: address, port: port) }
        return IPv4Endpoint(address: try lookUp(host), port: port)
    }

    /// getaddrinfo(3), first IPv4 result.
    private static func lookUp(_ host: String) throws -> UInt32 {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard rc == 0 else {
            throw YaOKError(.invalidArgument, "Cannot resolve LAN peer host \"\(host)\": \(String(cString: gai_strerror(rc)))")
        }
        var node = list
        while let current = node {
            if current.pointee.ai_family == AF_INET, let address = current.pointee.ai_addr {
                let raw = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
                return IPv4Endpoint(raw).address
            }
            node = current.pointee.ai_next
        }
        throw YaOKError(.invalidArgument, "LAN peer host \"\(host)\" has no IPv4 address")
    }
}
