import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKNode
@testable import YaOKTransports

/// The LAN transport's connection (issue 21 §3): running with no usable network it is
/// "disconnected: no network", not "connected", and a change is an event. The interfaces
/// come from a source the test controls (the machine's network is not touched): listening
/// on every address binds 0.0.0.0 but sends nothing (no discovery, no peers).
@Suite(.serialized) struct LANNetworkStateTests {
    /// Interfaces a test switches on and off.
    final class Interfaces: @unchecked Sendable {
        let subnets = Locked<[BeaconSource.Subnet]>([])
        var source: @Sendable (String?) -> [BeaconSource.Subnet] { { [self] _ in subnets.withLock { $0 } } }
        func set(_ s: [BeaconSource.Subnet]) { subnets.withLock { $0 = s } }
    }

    static let wifi = BeaconSource.Subnet(address: 0xC0A8_0107, mask: 0xFFFF_FF00)  // 192.168.1.7/24

    static func options(listen: String = "0.0.0.0", interface: String? = nil) -> LANTransport.Options {
        var o = LANTransport.Options()
        o.listenAddress = listen
        o.listenPort = 0
        if let interface {
            o.discovery = LANTransport.Options.Discovery()
            o.discovery?.interface = interface
        } else {
            o.discovery = nil
        }
        return o
    }

    /// The connection after the interfaces were read, as "state" or "state:reason".
    static func reading(_ t: LANTransport) -> String {
        t.state.withLock { s in
            s.running = true
            _ = t.refreshNetworkLocked(&s, force: true)
        }
        guard let c = t.connection else { return "none" }
        return c.reason.map { "\(c.state.rawValue):\($0.rawValue)" } ?? c.state.rawValue
    }

    @Test func noInterfaceUpButLoopbackIsNoNetwork() throws {
        let interfaces = Interfaces()
        let t = try LANTransport(options: Self.options(), interfaces: interfaces.source)
        #expect(t.connection == nil)  // not running
        #expect(Self.reading(t) == "disconnected:no_network")
        #expect(t.connection?.detail == "No network: no IPv4 interface is up (other than loopback)")
        interfaces.set([Self.wifi])
        #expect(Self.reading(t) == "connected")
        interfaces.set([])
        #expect(Self.reading(t) == "disconnected:no_network")
    }

    @Test func aListenAddressMustBeOnAnInterfaceThatIsUp() throws {
        let interfaces = Interfaces()
        interfaces.set([BeaconSource.Subnet(address: 0x0A00_0002, mask: 0xFF00_0000)])  // 10.0.0.2/8
        let t = try LANTransport(options: Self.options(listen: "192.168.1.7"), interfaces: interfaces.source)
        #expect(Self.reading(t) == "disconnected:no_network")
        #expect(t.connection?.detail?.contains("192.168.1.7 is not the address of an interface that is up") == true)
        interfaces.set([Self.wifi])
        #expect(Self.reading(t) == "connected")
    }

    @Test func aNamedDiscoveryInterfaceMustBeUp() throws {
        let interfaces = Interfaces()
        let t = try LANTransport(options: Self.options(interface: "wlan0"), interfaces: interfaces.source)
        #expect(Self.reading(t) == "disconnected:no_network")
        #expect(t.connection?.detail == "No network: wlan0 is down or has no IPv4 address")
    }

    @Test func aLoopbackListenerOrStaticPeerAlwaysHasItsNetwork() throws {
        let interfaces = Interfaces()
        let t = try LANTransport(options: Self.options(listen: "127.0.0.1"), interfaces: interfaces.source)
        #expect(Self.reading(t) == "connected")
        // Listening on every address, with a peer on this host (as `yaok run --lan-peer 127.0.0.1:…`).
        let u = try LANTransport(options: Self.options(), interfaces: interfaces.source)
        u.state.withLock { s in
            s.statics = [StaticPeer(text: "127.0.0.1:4000", endpoint: IPv4Endpoint(address: 0x7F00_0001, port: 4000), nextAttempt: 0)]
        }
        #expect(Self.reading(u) == "connected")
    }

    /// Through a node: the state after start, and an event when the network comes and goes.
    @Test func aNodeShowsNoNetworkAndAnEventWhenItChanges() throws {
        let temp = try TempNode()
        defer { temp.remove() }
        let node = temp.node
        let seen = Locked<[TransportConnection]>([])
        node.setEventHandler { e in
            if case .transportConnection("lan", let c) = e { seen.withLock { $0.append(c) } }
        }
        let interfaces = Interfaces()
        try node.addTransport(try LANTransport(options: Self.options(), interfaces: interfaces.source))
        try node.setTransport("lan", enabled: true)
        func lan() -> TransportConnection? { node.transports().first { $0.name == "lan" }?.connection }
        #expect(lan()?.state == .disconnected && lan()?.reason == .noNetwork)
        #expect(lan()?.detail?.hasPrefix("No network") == true)
        #expect(try node.diagnostics().serialized.contains("\"no_network\""))

        interfaces.set([Self.wifi])
        try waitUntil("connected", timeout: 10) { lan() == .connected }
        try waitUntil("its event", timeout: 10) { seen.withLock { $0.last } == .connected }
        interfaces.set([])
        try waitUntil("no network again", timeout: 10) { lan()?.reason == .noNetwork }
        try waitUntil("its event", timeout: 10) { seen.withLock { $0.last?.reason } == .noNetwork }
    }
}
