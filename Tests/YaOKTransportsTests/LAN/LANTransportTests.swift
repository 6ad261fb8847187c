import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKTransports

/// The LAN transport against a fake node (links that record units): connections, framing,
/// keepalives, timeouts, static peers and discovery, all on 127.0.0.1.
@Suite struct LANTransportTests {
    // MARK: - Lifecycle and errors

    @Test func startReportsTheBoundPortAndStopClosesEverything() throws {
        let (transport, opener, port) = try startLoopback()
        #expect(port != 0)
        let client = try RawClient(port: port)
        let link = try opener.waitForOpenLink()
        #expect(!link.initiator)
        #expect(link.mtu == Wire.maxPacketLength + 64)

        transport.stop()
        #expect(link.isClosed)
        #expect(client.waitForClose(timeout: 2))
        #expect(transport.listeningPort == nil)
        #expect(throws: RawError.self) { try RawClient(port: port) }
        transport.stop()  // idempotent

        try transport.start(opener: opener)  // and it starts again
        #expect(transport.listeningPort != nil)
        transport.stop()
    }

    @Test func aPortInUseIsAClearError() throws {
        let (first, _, port) = try startLoopback()
        defer { first.stop() }
        let second = try LANTransport(options: loopbackOptions { $0.listenPort = port })
        let error = #expect(throws: YaOKError.self) { try second.start(opener: try FakeOpener()) }
        #expect(error?.message.contains("port \(port) is already in use") == true)
        #expect(second.listeningPort == nil)
    }

    @Test func badOptionsAreClearErrors() throws {
        let badAddress = #expect(throws: YaOKError.self) {
            _ = try LANTransport(options: loopbackOptions { $0.listenAddress = "my laptop" })
        }
        #expect(badAddress?.message.contains("not an IPv4 address") == true)

        let badGroup = #expect(throws: YaOKError.self) {
            _ = try LANTransport(options: loopbackOptions { o in
                var d = LANTransport.Options.Discovery()
                d.group = "239.255.42"
                o.discovery = d
            })
        }
        #expect(badGroup?.message.contains("discovery group") == true)

        let badTimeout = #expect(throws: YaOKError.self) {
            _ = try LANTransport(options: loopbackOptions { $0.idleTimeout = 0 })
        }
        #expect(badTimeout != nil)

        let transport = try LANTransport(options: loopbackOptions { o in
            var d = LANTransport.Options.Discovery()
            d.group = "127.0.0.1"  // unicast: no multicast traffic leaves this host
            d.interface = "yaok-no-such0"
            o.discovery = d
        })
        let noInterface = #expect(throws: YaOKError.self) { try transport.start(opener: try FakeOpener()) }
        #expect(noInterface?.message == "No such network interface: \"yaok-no-such0\"")
        #expect(transport.listeningPort == nil)  // nothing left open

        let badPeer = try LANTransport(options: loopbackOptions { $0.staticPeers = ["127.0.0.1"] })
        let peerError = #expect(throws: YaOKError.self) { try badPeer.start(opener: try FakeOpener()) }
        #expect(peerError?.message.contains("host:port") == true)
    }

    // MARK: - Links over connections

    @Test func aStaticPeerGetsOneLinkEachWayAndUnitsFlow() throws {
        let (a, aNode, port) = try startLoopback()
        defer { a.stop() }
        let (b, bNode, _) = try startLoopback { $0.staticPeers = ["127.0.0.1:\(port)"] }
        defer { b.stop() }

        let aLink = try aNode.waitForOpenLink()
        let bLink = try bNode.waitForOpenLink()
        #expect(bLink.initiator && !aLink.initiator)

        // Units keep their boundaries, whatever their size, up to the MTU.
        let small: [UInt8] = [1, 2, 3]
        let largest = (0..<LANTransport.linkMTU).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        bLink.send(small)
        bLink.send(largest)
        aLink.send(small)
        try waitUntil("A's two units") { aLink.units.count == 2 }
        try waitUntil("B's unit") { bLink.units.count == 1 }
        #expect(aLink.units == [small, largest])
        #expect(bLink.units == [small])
        #expect(a.connectionCount == 1 && b.connectionCount == 1)
    }

    @Test func aStaticPeerIsReconnectedAfterTheLinkEnds() throws {
        let (a, aNode, port) = try startLoopback()
        defer { a.stop() }
        let (b, bNode, _) = try startLoopback {
            $0.staticPeers = ["127.0.0.1:\(port)"]
            $0.reconnectDelay = 0.05
        }
        defer { b.stop() }
        let first = try aNode.waitForOpenLink()
        let bFirst = try bNode.waitForOpenLink()
        first.endFromNode("handshake failed")  // A's node ends it: A closes the socket…
        try waitUntil("B to see the close") { bFirst.isClosed }  // …B's link hears of it
        try waitUntil("a second link") { aNode.openLinks.count == 1 && aNode.links.count == 2 }
        // B's side of the new connection opens its link on its own event thread, which a
        // loaded machine may not have run yet when A's has.
        try waitUntil("B's second link") { bNode.openLinks.count == 1 && bNode.links.count == 2 }
    }

    @Test func aStaticPeerThatIsNotThereIsRetriedWithBackoff() throws {
        let (gone, _, unusedPort) = try startLoopback()
        gone.stop()  // nobody listens on that port now
        let (b, bNode, _) = try startLoopback {
            $0.staticPeers = ["127.0.0.1:\(unusedPort)"]
            $0.reconnectDelay = 0.05
            $0.maxReconnectDelay = 0.2
        }
        defer { b.stop(); withExtendedLifetime(bNode) {} }  // the transport holds its node weakly
        let start = Date()
        pause(nanoseconds: 1_000_000_000)
        let json = b.diagnostics().serialized
        let elapsed = Date().timeIntervalSince(start)  // more than 1 s on a busy machine
        #expect(json.contains("\"connected\":false"))
        #expect(json.contains("connect failed: Connection refused"))
        // Backoff: 0.1, 0.2, 0.2… s, so about five attempts a second, not hundreds.
        let failures = Int(b.diagnostics().field("static_peers", 0, "failures") ?? 0)
        #expect(failures >= 3 && failures <= Int(elapsed / 0.2) + 3, "\(failures) failures in \(elapsed) s")
    }

    // MARK: - Keepalives and timeouts

    @Test func keepalivesKeepAQuietLinkOpen() throws {
        let fast: (inout LANTransport.Options) -> Void = {
            $0.keepaliveInterval = 0.1
            $0.idleTimeout = 0.5
            $0.handshakeTimeout = 0.5
        }
        let (a, aNode, port) = try startLoopback(echo: false, fast)
        defer { a.stop() }
        let (b, bNode, _) = try startLoopback { fast(&$0); $0.staticPeers = ["127.0.0.1:\(port)"] }
        defer { b.stop() }
        let aLink = try aNode.waitForOpenLink()
        let bLink = try bNode.waitForOpenLink()
        for unit: [UInt8] in [[1], [2]] {  // two units each way: the "handshake" is done
            aLink.send(unit)
            bLink.send(unit)
        }
        try waitUntil("the units") { aLink.units.count == 2 && bLink.units.count == 2 }
        pause(nanoseconds: 1_500_000_000)  // 3× the idle timeout, silent
        #expect(!aLink.isClosed && !bLink.isClosed)
        #expect(a.connectionCount == 1)
    }

    @Test func aConnectionThatSendsNothingIsClosed() throws {
        let (a, aNode, port) = try startLoopback { $0.handshakeTimeout = 0.3 }
        defer { a.stop() }
        let client = try RawClient(port: port)
        let link = try aNode.waitForOpenLink()
        #expect(client.waitForClose(timeout: 3))
        try waitUntil("the link to close") { link.isClosed }
        #expect(link.closedBecause?.contains("no handshake") == true)
        #expect(a.connectionCount == 0)
    }

    @Test func keepalivesAloneDoNotPassForAHandshake() throws {
        let (a, aNode, port) = try startLoopback { $0.handshakeTimeout = 0.4 }
        defer { a.stop() }
        let client = try RawClient(port: port)
        let link = try aNode.waitForOpenLink()
        let start = Date()
        while Date().timeIntervalSince(start) < 3, !link.isClosed {
            client.write(Frame.keepalive)
            pause(nanoseconds: 50_000_000)
        }
        #expect(link.isClosed)
        #expect(link.units.isEmpty)
    }

    @Test func anIdleConnectionIsClosed() throws {
        let (a, aNode, port) = try startLoopback { $0.idleTimeout = 0.4; $0.handshakeTimeout = 60 }
        defer { a.stop() }
        let client = try RawClient(port: port)
        client.write(try Frame.encode([9, 9]))
        let link = try aNode.waitForOpenLink()
        try waitUntil("the unit") { link.units == [[9, 9]] }
        #expect(client.waitForClose(timeout: 3))
        try waitUntil("the link to close") { link.isClosed }  // just after the socket
        #expect(link.closedBecause?.contains("nothing received") == true)
    }

    @Test func theNodeEndingALinkClosesTheSocket() throws {
        let (a, aNode, port) = try startLoopback()
        defer { a.stop() }
        let client = try RawClient(port: port)
        let link = try aNode.waitForOpenLink()
        link.endFromNode("protocol violation")
        #expect(client.waitForClose(timeout: 2))
        try waitUntil("the connection to go") { a.connectionCount == 0 }
        #expect(a.diagnostics().serialized.contains("the node closed the link: protocol violation"))
    }

    @Test func unitsBeforeThePeerClosesStillArrive() throws {
        let (a, aNode, port) = try startLoopback()
        defer { a.stop() }
        do {
            let client = try RawClient(port: port)
            client.write(try Frame.encode([1]) + Frame.keepalive + Frame.encode([2, 2]))
        }  // closed here
        let link = try waitFor("a link") { aNode.links.first }
        try waitUntil("the link to close") { link.isClosed }
        #expect(link.units == [[1], [2, 2]])
        #expect(link.closedBecause == "the peer closed the connection")
    }

    /// A unit the node refuses closes the connection (as on BLE): the units after it are
    /// not fed to the link, now or at a later read, and the peer learns at once.
    @Test func aRefusedUnitClosesTheConnection() throws {
        let opener = try FakeOpener(refuseAfter: 1)
        let a = try LANTransport(options: loopbackOptions())
        try a.start(opener: opener)
        defer { a.stop() }
        let client = try RawClient(port: try #require(a.listeningPort))
        let link = try opener.waitForOpenLink()
        #expect(client.write(try Frame.encode([1]) + Frame.encode([2]) + Frame.encode([3])))
        #expect(client.waitForClose(timeout: 5), "the connection is closed at the refusal")
        try waitUntil("the link to be told") { link.isClosed }
        #expect(link.units == [[1]])
        #expect(link.closedBecause == "the node refused a unit")
        #expect(a.connectionCount == 0)
    }

    /// Units a node sends in one go (one pump) leave in one gathering write, not one
    /// send(2) each; the peer reads them all, in order.
    @Test func aBurstOfUnitsLeavesInOneWrite() throws {
        let (a, aNode, port) = try startLoopback()
        defer { a.stop() }
        let client = try RawClient(port: port)
        let link = try aNode.waitForOpenLink()
        let units = (0..<50).map { i in [UInt8](repeating: UInt8(i), count: 100 + i) }
        link.send(burst: units)
        let expected = units.flatMap { (try? Frame.encode($0)) ?? [] }
        #expect(client.read(count: expected.count, timeout: 5) == expected)
        let writes = a.state.withLock { s in s.connections.values.first?.writeCalls }
        #expect(writes == 1)
    }

    /// A node's flush on an app's thread hands a LAN link its units there (LAN's send is
    /// safe from any thread): they are written at once, on that thread, in one write, not
    /// left for a work item posted to the event thread.
    @Test func unitsHandedOnAnAppThreadAreWrittenAtOnceInOneWrite() throws {
        let (a, aNode, port) = try startLoopback()
        defer { a.stop() }
        let client = try RawClient(port: port)
        let link = try aNode.waitForOpenLink()
        #expect(link.takesUnitsOnAnyThread)
        let units = (0..<20).map { i in [UInt8](repeating: UInt8(i), count: 200 + i) }
        link.sendHere(units)
        #expect(a.state.withLock { s in s.connections.values.first?.writeCalls } == 1)
        let expected = units.flatMap { (try? Frame.encode($0)) ?? [] }
        #expect(client.read(count: expected.count, timeout: 5) == expected)
    }

    // MARK: - Discovery (unicast beacons on 127.0.0.1: no multicast leaves this host)

    /// Two transports whose beacons go to each other's UDP port; B starts `lateBy` seconds after A.
    func discoveryPair(beaconInterval: Double = 0.1, lateBy: Double = 0) throws -> (LANTransport, FakeOpener, LANTransport, FakeOpener) {
        let ports = freeUDPPorts(2)
        func options(listen: UInt16, sendTo: UInt16) -> (inout LANTransport.Options) -> Void {
            { o in
                var d = LANTransport.Options.Discovery()
                d.group = "127.0.0.1"
                d.port = sendTo
                d.receivePort = listen
                d.beaconInterval = beaconInterval
                o.discovery = d
            }
        }
        let (a, aNode, _) = try startLoopback(options(listen: ports[0], sendTo: ports[1]))
        if lateBy > 0 { pause(nanoseconds: UInt64(lateBy * 1e9)) }
        let (b, bNode, _) = try startLoopback(options(listen: ports[1], sendTo: ports[0]))
        return (a, aNode, b, bNode)
    }

    @Test func beaconsFindThePeerAndMakeExactlyOneConnection() throws {
        let (a, aNode, b, bNode) = try discoveryPair()
        defer { a.stop(); b.stop() }
        let aLink = try aNode.waitForOpenLink()
        let bLink = try bNode.waitForOpenLink()
        #expect(aLink.initiator != bLink.initiator)
        // Beacons keep coming (ten per second): still one connection, not one per beacon.
        pause(nanoseconds: 800_000_000)
        #expect(aNode.links.count == 1 && bNode.links.count == 1)
        #expect(a.connectionCount == 1 && b.connectionCount == 1)
        let peers = a.diagnostics().serialized
        #expect(peers.contains("\"address\":\"127.0.0.1:\(b.listeningPort ?? 0)\""))
        #expect(peers.contains("first_seen_ms"))
    }

    @Test func aLateJoinerIsAnsweredAtOnce() throws {
        // Beacons once a minute: A's first one went out before B listened, so only A's
        // answer to B's first beacon lets them meet within the test's two seconds.
        let (a, aNode, b, bNode) = try discoveryPair(beaconInterval: 60, lateBy: 0.3)
        defer { a.stop(); b.stop() }
        _ = try aNode.waitForOpenLink(timeout: 2)
        _ = try bNode.waitForOpenLink(timeout: 2)
        // A: its first beacon (unheard) and its answer to B. B: its first, and its answer to
        // A's answer (A's token was new to B). Then nobody answers again: no storm.
        pause(nanoseconds: 300_000_000)
        #expect(a.diagnostics().field("discovery", "beacons_sent") == 2)
        #expect(b.diagnostics().field("discovery", "beacons_sent") == 2)
    }

    @Test func ownBeaconsAreIgnored() throws {
        let port = freeUDPPorts(1)[0]
        let (a, aNode, _) = try startLoopback { o in
            var d = LANTransport.Options.Discovery()
            d.group = "127.0.0.1"
            d.port = port  // beacons to itself
            d.beaconInterval = 0.05
            o.discovery = d
        }
        defer { a.stop() }
        // At least five of its own beacons heard (however loaded the machine), none taken for a peer.
        try waitUntil("five beacons", timeout: 10) { (a.diagnostics().field("discovery", "beacons_sent") ?? 0) >= 5 }
        pause(nanoseconds: 100_000_000)
        let diagnostics = a.diagnostics()
        #expect(diagnostics.serialized.contains("\"peers\":[]"))
        #expect(aNode.links.isEmpty)
    }

    @Test func connectionAttemptsToABeaconedAddressAreRateLimited() throws {
        let port = freeUDPPorts(1)[0]
        let (a, aNode, _) = try startLoopback { o in
            var d = LANTransport.Options.Discovery()
            d.group = "127.0.0.1"
            d.port = port
            d.beaconInterval = 60
            o.discovery = d
            o.connectAttemptInterval = 30
        }
        defer { a.stop(); withExtendedLifetime(aNode) {} }
        let nobody = freeUDPPorts(1)[0]  // a TCP port nobody listens on (very likely)
        let token = [UInt8](repeating: 0xff, count: 16)  // above ours: we are the one to connect
        for _ in 0..<50 {
            sendDatagram(Beacon(token: token, tcpPort: nobody).encoded, toPort: port)
        }
        try waitUntil("the first attempt to fail") { (a.diagnostics().field("closed_connections") ?? 0) >= 1 }
        pause(nanoseconds: 300_000_000)
        #expect(a.diagnostics().field("closed_connections") == 1)
        // Garbage datagrams are ignored without a word.
        sendDatagram([UInt8](repeating: 0x59, count: 22), toPort: port)
        sendDatagram([], toPort: port)
        sendDatagram([UInt8](repeating: 0, count: 1400), toPort: port)
        pause(nanoseconds: 100_000_000)
        #expect(a.diagnostics().serialized.components(separatedBy: "first_seen_ms").count == 2)
    }

    @Test func beaconsNamingManyAddressesAreThrottled() throws {
        let port = freeUDPPorts(1)[0]
        let (a, aNode, _) = try startLoopback { o in
            var d = LANTransport.Options.Discovery()
            d.group = "127.0.0.1"
            d.port = port
            d.beaconInterval = 60
            o.discovery = d
        }
        defer { a.stop(); withExtendedLifetime(aNode) {} }
        let token = [UInt8](repeating: 0xff, count: 16)
        let start = Date()
        for tcpPort in UInt16(1)...200 {  // 200 addresses (ports), in a burst
            sendDatagram(Beacon(token: token, tcpPort: tcpPort).encoded, toPort: port)
        }
        pause(nanoseconds: 300_000_000)
        let attempts = (a.diagnostics().field("closed_connections") ?? 0) + Int64(a.connectionCount)
        if Date().timeIntervalSince(start) < 0.9 {  // still within the first second
            #expect(attempts <= Int64(LANTransport.maxDiscoveryAttemptsPerSecond), "\(attempts) attempts")
        }
        #expect(attempts >= 1)
        #expect((a.diagnostics().serialized.components(separatedBy: "first_seen_ms").count - 1) <= 64)
    }

    @Test func aBeaconSourceGetsTwoDialsPerWindowWhateverPortsItNames() throws {
        // Beacons are unauthenticated: one source naming port after port (a spoofed victim's
        // address, say) must not make this node dial every one of them, nor 4 a second.
        let port = freeUDPPorts(1)[0]
        let (a, aNode, _) = try startLoopback { o in
            var d = LANTransport.Options.Discovery()
            d.group = "127.0.0.1"
            d.port = port
            d.beaconInterval = 60
            o.discovery = d
        }
        defer { a.stop(); withExtendedLifetime(aNode) {} }
        var listeners: [TCPListener] = []
        var ports: [UInt16] = []
        while listeners.count < 20 {
            let p = freeTCPPort()
            if let l = try? TCPListener(port: p) {
                listeners.append(l)
                ports.append(p)
            }
        }
        let token = [UInt8](repeating: 0xff, count: 16)  // above ours: we are the one to connect
        // Over a second and a half, each port named again and again: without the per-source
        // limit the overall one alone would allow six or more dials.
        let start = Date()
        while Date().timeIntervalSince(start) < 1.5 {
            for p in ports { sendDatagram(Beacon(token: token, tcpPort: p).encoded, toPort: port) }
            pause(nanoseconds: 50_000_000)
        }
        pause(nanoseconds: 200_000_000)
        let dials = listeners.reduce(0) { $0 + $1.acceptAll() }
        #expect(dials >= 1)
        #expect(dials <= LANTransport.maxDialsPerSourcePerWindow, "\(dials) dials to one beacon source")
        #expect((a.diagnostics().field("dials_limited") ?? 0) > 0)
    }

    @Test func diagnosticsNameAddressesAndTimesOnly() throws {
        let (a, aNode, port) = try startLoopback()
        defer { a.stop() }
        let client = try RawClient(port: port)
        _ = client
        _ = try aNode.waitForOpenLink()
        let json = a.diagnostics().serialized
        for key in ["\"name\":\"lan\"", "\"running\":true", "\"listening\":{\"address\":\"127.0.0.1\",\"port\":\(port)}",
                    "\"discovery\":{\"enabled\":false}", "\"direction\":\"inbound\"", "\"state\":\"open\"",
                    "\"since_ms\":", "\"max_connections\":256"] {
            #expect(json.contains(key), "\(key) in \(json)")
        }
    }
}

extension JSON {
    /// The integer at a path of object keys and array indices, if there is one.
    func field(_ path: Any...) -> Int64? {
        var current = self
        for step in path {
            switch (current, step) {
            case (.object(let fields), let key as String):
                guard let value = fields.first(where: { $0.0 == key })?.1 else { return nil }
                current = value
            case (.array(let items), let index as Int):
                guard items.indices.contains(index) else { return nil }
                current = items[index]
            default:
                return nil
            }
        }
        if case .int(let value) = current { return value }
        return nil
    }
}
