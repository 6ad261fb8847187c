import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode
@testable import YaOKTransports

/// The LAN transport's slots under a crowd (PROTOCOL.md §7, `SlotPolicy`): strangers that
/// complete the handshake and connections that never do must not keep a contact out, nor
/// keep the node from dialing out; a stranger's connection ends after its grace period; one
/// address holds only so many connections. Real sockets on 127.0.0.1 (127.0.0.2 poses as a
/// second host).
@Suite(.serialized) struct LANSlotTests {
    /// Small slots, so a crowd of ten fills them: 8 in all, 2 kept for our own connects.
    /// The strangers' grace period is long: only eviction can free their slots here.
    static func aliceOptions(_ o: inout LANTransport.Options) {
        o.maxConnections = 8
        o.reservedOutboundSlots = 2
        o.maxStrangerConnections = 8
        o.strangerGracePeriod = 600
        o.reconnectDelay = 0.1
        o.maxReconnectDelay = 0.5
    }

    @Test func aStrangerCrowdHoldingEverySlotDoesNotKeepAContactOut() throws {
        let nodes = try TestNodes()
        defer { nodes.close() }
        let alice = try nodes.node("Alice")
        let aliceLAN = try nodes.lan(alice, LANSlotTests.aliceOptions)
        let port = aliceLAN.listeningPort ?? 0
        let crowd = try nodes.crowd(attacking: port)
        try waitForFullSlots(aliceLAN, crowd)

        // Bob, a contact, connects and sends: his connection takes the slot of a stranger.
        let bob = try nodes.node("Bob")
        let (bobID, aliceID) = try nodes.introduce(alice, bob)
        _ = try nodes.lan(bob) { $0.staticPeers = ["127.0.0.1:\(port)"] }
        _ = try bob.send(to: aliceID, text: "through the crowd")
        try waitUntil("Alice to receive Bob's message", timeout: 20) { try alice.texts(bobID) == ["through the crowd"] }
        #expect((aliceLAN.diagnostics().field("evicted_connections") ?? 0) >= 1)
        #expect(aliceLAN.connectionCount <= 8)
        print("LAN slots: Bob got in past a crowd of strangers, evicted \(aliceLAN.diagnostics().field("evicted_connections") ?? -1), refused "
              + "\(aliceLAN.diagnostics().field("refused_connections") ?? -1)")
    }

    @Test func aStrangerCrowdHoldingEverySlotDoesNotStopTheNodeDialingOut() throws {
        let nodes = try TestNodes()
        defer { nodes.close() }
        let alice = try nodes.node("Alice")
        let carol = try nodes.node("Carol")
        let (carolID, aliceID) = try nodes.introduce(alice, carol)
        // Alice dials Carol at a port nobody listens on yet: she retries every half second.
        let carolPort = freeTCPPort()
        let aliceLAN = try nodes.lan(alice) { o in
            LANSlotTests.aliceOptions(&o)
            o.staticPeers = ["127.0.0.1:\(carolPort)"]
        }
        let crowd = try nodes.crowd(attacking: aliceLAN.listeningPort ?? 0)
        try waitForFullSlots(aliceLAN, crowd)

        // Carol comes up, not dialing anyone: only Alice's own connect can bring them together.
        _ = try nodes.lan(carol) { $0.listenPort = carolPort }
        _ = try alice.send(to: carolID, text: "dialed out")
        try waitUntil("Carol to receive Alice's message", timeout: 20) { try carol.texts(aliceID) == ["dialed out"] }
        #expect(aliceLAN.connectionCount <= 8)
    }

    /// Waits until the crowd holds every slot inbound connections may take (6 of 8 once the
    /// policy keeps 2 for our connects; all 8 before it), most of them strangers whose
    /// handshake has completed.
    func waitForFullSlots(_ lan: LANTransport, _ crowd: Node) throws {
        try waitUntil("the crowd to hold the inbound slots", timeout: 20) {
            let strangers = lan.diagnostics().serialized.components(separatedBy: "\"peer\":\"stranger\"").count - 1
            let full = lan.connectionCount >= 6
            return full && strangers >= 3
        }
        _ = crowd
    }

    // MARK: - The transport alone (a fake node says who is a stranger)

    @Test func strangersAreClosedAfterTheirGracePeriodAndCappedInNumber() throws {
        let (a, aNode, port) = try startLoopback { o in
            o.strangerGracePeriod = 0.5
            o.maxStrangerConnections = 2
            o.handshakeTimeout = 60
        }
        defer { a.stop() }
        var clients: [RawClient] = []
        for _ in 0..<4 { clients.append(try RawClient(port: port)) }
        try waitUntil("four links") { aNode.openLinks.count == 4 }
        let links = aNode.links
        for link in links {
            link.authenticate()
            link.setContact(false)
        }
        let contact = try RawClient(port: port)
        let contactLink = try waitFor("the contact's link") { aNode.links.count == 5 ? aNode.links.last : nil }
        contactLink.authenticate()
        contactLink.setContact(true)
        // At most two strangers at once: the two newest go at once.
        try waitUntil("the newest strangers to be closed") { links[2].isClosed && links[3].isClosed }
        #expect(links[3].closedBecause?.contains("connections with strangers are open") == true)
        // The other two at the end of their grace period; the contact stays.
        try waitUntil("the grace period to end", timeout: 10) { links[0].isClosed && links[1].isClosed }
        #expect(links[0].closedBecause?.contains("not a contact") == true)
        pause(nanoseconds: 700_000_000)
        #expect(!contactLink.isClosed)
        #expect(a.connectionCount == 1)
        #expect(a.diagnostics().field("strangers_closed") == 4)
        _ = (clients, contact)
    }

    @Test func oneAddressHoldsOnlySoManyConnections() throws {
        let (a, aNode, port) = try startLoopback { $0.maxConnectionsPerAddress = 3 }
        defer { a.stop() }
        let other: UInt32 = 0x7f00_0002  // 127.0.0.2: another host, as far as the transport can tell
        var flood: [RawClient] = []
        for _ in 0..<10 { flood.append(try RawClient(port: port, from: other)) }
        try waitUntil("ten connections seen") {
            (a.diagnostics().field("evicted_connections") ?? 0) + Int64(a.connectionCount) >= 10
        }
        #expect(a.connectionCount == 3)
        #expect(a.diagnostics().field("evicted_connections") == 7)  // the oldest unfinished went
        // A connection whose handshake has finished with a contact is never evicted: with three
        // of them, a fourth from that address is refused. (Each connection's link is opened
        // on the loop after its accept: wait for all three, or one stays unfinished.)
        try waitUntil("the three links opened") { aNode.openLinks.count == 3 }
        for link in aNode.openLinks {
            link.authenticate()
            link.setContact(true)
        }
        let late = try RawClient(port: port, from: other)
        #expect(late.waitForClose(timeout: 5))
        #expect(a.diagnostics().field("refused_connections") == 1)
        // Another address is not held up by it.
        let elsewhere = try RawClient(port: port)
        try waitUntil("the connection from 127.0.0.1") { a.connectionCount == 4 }
        _ = (flood, elsewhere)
    }

    @Test func inboundConnectionsLeaveTheReservedSlotsForOurOwnConnects() throws {
        let peerPort = freeTCPPort()
        let (a, aNode, port) = try startLoopback { o in
            o.maxConnections = 4
            o.reservedOutboundSlots = 1
            o.staticPeers = ["127.0.0.1:\(peerPort)"]
            o.reconnectDelay = 0.1
            o.maxReconnectDelay = 0.2
        }
        defer { a.stop() }
        var crowd: [RawClient] = []  // connections that never send a byte
        for _ in 0..<6 { crowd.append(try RawClient(port: port)) }
        try waitUntil("the crowd to be in") { aNode.openLinks.count >= 3 }
        for link in aNode.openLinks {  // contacts: none of them can be evicted
            link.authenticate()
            link.setContact(true)
        }
        pause(nanoseconds: 300_000_000)
        #expect(a.connectionCount <= 4)
        // The static peer comes up: A's own connect finds the reserved slot.
        let listener = try TCPListener(port: peerPort)
        try waitUntil("A to connect out", timeout: 10) { listener.acceptOne() }
        _ = crowd
    }
}

// MARK: - Helpers

/// Nodes with cheap key stretching and LAN transports on 127.0.0.1, closed and removed together.
final class TestNodes {
    private var nodes: [(Node, String)] = []

    init() throws {}

    func node(_ name: String) throws -> Node {
        let dir = NSTemporaryDirectory() + "yaok-lan-slots-" + UUID().uuidString
        var options = Node.Options()
        options.pinHashing = .insecureFastForTestsOnly
        options.allowTestOnlyKDFCosts = true
        let node = try Node(dataDirectory: dir, options: options)
        nodes.append((node, dir))
        _ = try node.setup(name: name, pin: "246810", confirmation: "246810")
        return node
    }

    /// Makes `a` and `b` each other's contacts; returns (b's id at a, a's id at b).
    func introduce(_ a: Node, _ b: Node) throws -> (Int64, Int64) {
        (try a.addContact(card: b.profile().text).id, try b.addContact(card: a.profile().text).id)
    }

    func lan(_ node: Node, _ adjust: (inout LANTransport.Options) -> Void = { _ in }) throws -> LANTransport {
        let lan = try LANTransport(options: loopbackOptions(adjust))
        try node.addTransport(lan)
        try node.setTransport("lan", enabled: true)
        return lan
    }

    /// Mallory, a node who is nobody's contact, holding ten connections to `port` (static
    /// peers, redialed soon when closed) and never closing them for being strangers.
    func crowd(attacking port: UInt16) throws -> Node {
        let mallory = try node("Mallory")
        _ = try lan(mallory) { o in
            o.staticPeers = Array(repeating: "127.0.0.1:\(port)", count: 10)
            o.maxConnectionsPerAddress = 64
            o.maxStrangerConnections = 64
            o.strangerGracePeriod = 86_400
            o.reconnectDelay = 0.5
            o.maxReconnectDelay = 2
        }
        return mallory
    }

    func close() {
        for (node, dir) in nodes.reversed() {
            node.close()
            try? FileManager.default.removeItem(atPath: dir)
        }
    }
}

/// A free TCP port on 127.0.0.1 (bound, read, released: a small race, fine in tests).
func freeTCPPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
            _ = bind(fd, p, length)
            _ = getsockname(fd, p, &length)
        }
    }
    return UInt16(bigEndian: address.sin_port)
}

/// A plain listening socket on 127.0.0.1:`port`, to see connections arrive.
final class TCPListener {
    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var yes: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // `fd` is set: a throw from here runs deinit, which closes it (closing it here too
        // closed whatever another test's thread had opened under that number meanwhile).
        guard rc == 0, listen(fd, 64) == 0 else { throw RawError("cannot listen on \(port)") }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Accepts one waiting connection (closing it at once); false if none is waiting.
    func acceptOne() -> Bool {
        let client = accept(fd, nil, nil)
        guard client >= 0 else { return false }
        close(client)
        return true
    }

    /// Accepts every waiting connection, closing each; how many there were.
    func acceptAll() -> Int {
        var n = 0
        while acceptOne() { n += 1 }
        return n
    }
}
