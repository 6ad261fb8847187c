import Testing
@testable import YaOKTransports

/// Which beacon source addresses a node believes (PROTOCOL.md §7), alone.
@Suite struct BeaconSourceTests {
    static func address(_ text: String) -> UInt32 { IPv4Endpoint.parseAddress(text) ?? 0 }

    let subnets = [BeaconSource.Subnet(address: address("192.168.1.20"), mask: address("255.255.255.0")),
                   BeaconSource.Subnet(address: address("10.99.0.1"), mask: address("255.255.255.254"))]

    @Test func onlyHostsOfOurSubnetsAreBelieved() {
        #expect(BeaconSource.accepts(Self.address("192.168.1.7"), subnets: subnets, loopback: false))
        #expect(BeaconSource.accepts(Self.address("10.99.0.0"), subnets: subnets, loopback: false))  // a /31's both
        // Anywhere else: a spoofed beacon would send every node on the network there.
        #expect(!BeaconSource.accepts(Self.address("192.168.2.7"), subnets: subnets, loopback: false))
        #expect(!BeaconSource.accepts(Self.address("8.8.8.8"), subnets: subnets, loopback: false))
        #expect(!BeaconSource.accepts(Self.address("192.168.1.7"), subnets: [], loopback: true))
    }

    @Test func neverFromBroadcastMulticastOrZeroAddresses() {
        for text in ["192.168.1.255", "192.168.1.0", "255.255.255.255", "239.255.42.99", "224.0.0.1",
                     "0.0.0.0", "0.1.2.3", "240.0.0.1"] {
            let everything = subnets + [BeaconSource.Subnet(address: Self.address(text), mask: 0xFFFF_FF00)]
            #expect(!BeaconSource.accepts(Self.address(text), subnets: text.hasPrefix("192") ? subnets : everything,
                                          loopback: true), "\(text)")
        }
    }

    @Test func loopbackOnlyWhenListeningOnLoopback() {
        #expect(BeaconSource.accepts(Self.address("127.0.0.1"), subnets: [], loopback: true))
        #expect(BeaconSource.accepts(Self.address("127.3.2.1"), subnets: [], loopback: true))
        let lo = [BeaconSource.Subnet(address: Self.address("127.0.0.1"), mask: 0xFF00_0000)]
        #expect(!BeaconSource.accepts(Self.address("127.0.0.1"), subnets: lo, loopback: false))
    }

    @Test func theInterfacesSubnetsLeaveLoopbackOut() {
        // Whatever this machine has, lo is not among them; a named interface that does not
        // exist has none.
        #expect(!BeaconSource.localSubnets(interface: nil).contains { $0.address >> 24 == 127 })
        #expect(BeaconSource.localSubnets(interface: "lo").isEmpty)
        #expect(BeaconSource.localSubnets(interface: "no-such-interface0").isEmpty)
    }
}

/// The transport's use of it: loopback sources only when it listens on loopback.
@Suite struct TransportBeaconSourceTests {
    func accepts(_ source: String, listening listen: String) throws -> Bool {
        var options = LANTransport.Options()
        options.listenAddress = listen
        let transport = try LANTransport(options: options)  // never started: nothing opened
        return transport.state.withLock { s in
            transport.beaconSourceAcceptedLocked(&s, BeaconSourceTests.address(source))
        }
    }

    @Test func loopbackSourcesOnlyForATransportOnLoopback() throws {
        #expect(try accepts("127.0.0.1", listening: "127.0.0.1"))
        #expect(try accepts("127.0.0.9", listening: "127.0.0.1"))
        #expect(try !accepts("127.0.0.1", listening: "0.0.0.0"))
        // Whatever this machine's interfaces: never these.
        for source in ["8.8.8.8", "0.0.0.0", "239.255.42.99", "255.255.255.255"] {
            #expect(try !accepts(source, listening: "0.0.0.0"), "\(source)")
            #expect(try !accepts(source, listening: "127.0.0.1"), "\(source)")
        }
    }
}
