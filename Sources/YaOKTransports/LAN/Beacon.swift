import Glibc
import YaOKSupport
import YaOKSystem

/// A LAN discovery beacon (docs/PROTOCOL.md §7): "I accept Ya OK connections on this TCP
/// port", and nothing about who: a random token that changes every few minutes, so the
/// beacon names no person, device or key and cannot be linked across rotations by itself.
///
///     beacon = "YOK1" (4) || token (16) || tcp port (u16)    exactly 22 bytes
struct Beacon: Equatable, Sendable {
    static let magic: [UInt8] = Array("YOK1".utf8)
    static let tokenLength = 16
    static let length = 22

    /// Random, re-drawn every `LANTransport.Options.Discovery.tokenLifetime`. Used only to
    /// recognise one's own beacons and to decide which side connects (the lower token).
    let token: [UInt8]
    let tcpPort: UInt16

    init(token: [UInt8], tcpPort: UInt16) {
        self.token = token
        self.tcpPort = tcpPort
    }

    var encoded: [UInt8] {
        Beacon.magic + token + [UInt8(tcpPort >> 8), UInt8(tcpPort & 0xff)]
    }

    /// nil unless `datagram` is exactly a beacon: 22 bytes, the magic, a token of 16 bytes
    /// and a port that is not 0. Receivers ignore anything else without a word (a later
    /// version uses another magic).
    init?(decoding datagram: ArraySlice<UInt8>) {
        guard datagram.count == Beacon.length, datagram.prefix(4).elementsEqual(Beacon.magic) else { return nil }
        let start = datagram.startIndex
        let port = UInt16(datagram[start + 20]) << 8 | UInt16(datagram[start + 21])
        guard port != 0 else { return nil }
        token = Array(datagram[start + 4..<start + 20])
        tcpPort = port
    }

    /// The tie-break: of two nodes that hear each other, the one whose token is smaller
    /// (compared as unsigned bytes, first byte most significant) opens the connection.
    static func connects(own: [UInt8], peer: [UInt8]) -> Bool {
        own.lexicographicallyPrecedes(peer)
    }
}

extension Socket {
    /// The discovery socket: UDP on `port`, with SO_REUSEADDR so that several nodes on one
    /// machine share the port. For a multicast `group` it is bound to the group's address
    /// (on Linux that receives only datagrams sent to the group, so a unicast datagram
    /// forged from afar cannot pose as a beacon from the local network), joins the group (on `interface`, or on the interface the kernel routes the group to), loops
    /// its own beacons back (IP_MULTICAST_LOOP, so two nodes on one host hear each other)
    /// and sends with TTL 1 (beacons never leave the local network). For a unicast
    /// `group` (tests, or a network that wants directed beacons) it is bound to `bindHost`.
    static func openDiscovery(group: IPv4Endpoint, port: UInt16, bindHost: UInt32, interface: String?) throws -> Int32 {
        var ifIndex: Int32 = 0
        if let interface {
            guard let index = interfaceIndex(interface) else {
                throw YaOKError(.invalidArgument, "No such network interface: \"\(interface)\"")
            }
            ifIndex = index
        }
        let fd: Int32
        switch open(domain: AF_INET, type: Int32(SOCK_DGRAM.rawValue)) {
        case .success(let opened): fd = opened
        case .failure(let failure): throw error("Cannot open a UDP socket", failure)
        }
        var ok = false
        defer { if !ok { close(fd) } }
        setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        let bindTo = IPv4Endpoint(address: group.isMulticast ? group.address : bindHost, port: port)
        if let failure = bind(fd, bindTo) {
            throw YaOKError(.invalidArgument, "Cannot listen for LAN discovery beacons on UDP \(bindTo): \(failure)")
        }
        if group.isMulticast {
            var request = ip_mreqn()
            request.imr_multiaddr = in_addr(s_addr: group.address.bigEndian)
            request.imr_address = in_addr(s_addr: 0)
            request.imr_ifindex = ifIndex
            if let failure = setOption(fd, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, value: request) {
                let place = interface.map { "on \"\($0)\"" } ?? "(no interface given and no route to the group: is the network up?)"
                throw YaOKError(.invalidArgument, "Cannot join LAN discovery group \(group.host) \(place): \(failure)")
            }
            if ifIndex != 0 {
                var outgoing = ip_mreqn()
                outgoing.imr_ifindex = ifIndex
                if let failure = setOption(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, value: outgoing) {
                    throw error("Cannot send LAN discovery beacons on \"\(interface ?? "")\"", failure)
                }
            }
            setOption(fd, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, 1)
            setOption(fd, Int32(IPPROTO_IP), IP_MULTICAST_TTL, 1)
        }
        ok = true
        return fd
    }
}
