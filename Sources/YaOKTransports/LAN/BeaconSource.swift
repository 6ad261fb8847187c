import Glibc

/// Which source addresses a beacon is believed from (PROTOCOL.md §7). A beacon is
/// unauthenticated UDP and its source address is where this node connects: without this
/// check one spoofed datagram would make every node on the network dial any unicast address
/// anywhere. A real peer is on the network the beacon arrived on, so its source is on a
/// subnet of one of our interfaces.
enum BeaconSource {
    /// One IPv4 subnet of a local interface (host byte order).
    struct Subnet: Equatable {
        let address: UInt32
        let mask: UInt32
    }

    /// Whether a beacon from `address` may make this node connect there:
    /// - never from 0.0.0.0/8, multicast (224.0.0.0/4), 240.0.0.0/4 or the broadcast address;
    /// - from loopback (127.0.0.0/8) only when `loopback` (the transport listens on loopback);
    /// - otherwise only from a host address of one of `subnets` (not its network or
    ///   broadcast address, for subnets of more than two addresses).
    static func accepts(_ address: UInt32, subnets: [Subnet], loopback: Bool) -> Bool {
        let top = address >> 24
        guard top != 0, address >> 28 < 0xE else { return false }
        if top == 127 { return loopback }
        return subnets.contains { s in
            guard s.mask != 0, address & s.mask == s.address & s.mask else { return false }
            if s.mask >= 0xFFFF_FFFE { return true }  // /31, /32: no network or broadcast address
            let host = address & ~s.mask
            return host != 0 && host != ~s.mask
        }
    }

    /// The IPv4 subnets of the interfaces that are up (getifaddrs(3)), loopback excepted; of
    /// `interface` only, when one is named.
    static func localSubnets(interface: String?) -> [Subnet] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var subnets: [Subnet] = []
        var node = list
        while let current = node {
            node = current.pointee.ifa_next
            let entry = current.pointee
            guard let address = entry.ifa_addr, let netmask = entry.ifa_netmask,
                  Int32(address.pointee.sa_family) == AF_INET,
                  entry.ifa_flags & UInt32(IFF_UP) != 0,
                  entry.ifa_flags & UInt32(IFF_LOOPBACK) == 0 else { continue }
            if let interface, String(cString: entry.ifa_name) != interface { continue }
            let a = IPv4Endpoint(UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)).address
            let m = IPv4Endpoint(UnsafeRawPointer(netmask).loadUnaligned(as: sockaddr_in.self)).address
            subnets.append(Subnet(address: a, mask: m))
        }
        return subnets
    }
}
