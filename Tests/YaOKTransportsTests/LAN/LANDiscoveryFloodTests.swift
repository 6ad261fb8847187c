import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKTransports

/// Beacon floods from many (spoofed) source addresses must not take every dial from a node:
/// the peers it should reach are still dialed (PROTOCOL.md §7, "Dials from beacons are
/// limited"). Sources are 127.0.0.x (bound with bind(2)), beacons unicast on loopback.
@Suite(.serialized) struct LANDiscoveryFloodTests {
    /// A victim on loopback with beacons every half second (so a peer is steady after a second).
    func victim(_ adjust: (inout LANTransport.Options) -> Void = { _ in }) throws -> (LANTransport, FakeOpener, UInt16) {
        let port = freeUDPPorts(1)[0]
        let nowhere = freeUDPPorts(1)[0]
        let (a, aNode, _) = try startLoopback { o in
            var d = LANTransport.Options.Discovery()
            d.group = "127.0.0.1"
            d.port = nowhere  // its own beacons go nowhere anyone listens
            d.receivePort = port
            d.beaconInterval = 0.5
            o.discovery = d
            adjust(&o)
        }
        return (a, aNode, port)
    }

    static let floodToken = [UInt8](repeating: 0xff, count: 16)  // above the victim's: it dials
    static let peerToken = [UInt8](repeating: 0xff, count: 15) + [0xfe]  // above too (bar 2^-120)

    @Test func aFloodFromFreshSourcesDoesNotKeepASteadyPeerFromBeingDialed() throws {
        let (a, aNode, port) = try victim()
        let (b, bNode, bPort) = try startLoopback()
        defer { a.stop(); b.stop(); withExtendedLifetime((aNode, bNode)) {} }
        let nobody = freeUDPPorts(1)[0]  // a TCP port nobody listens on (very likely)
        let flood = try BeaconSenders(count: 250)
        let peer = try BeaconSenders(count: 1, first: 1)
        // Each 100 ms, five beacons from addresses not heard for seconds, then the peer's:
        // first come, first served, the five take every dial.
        var next = 0
        let start = Date()
        while Date().timeIntervalSince(start) < 20, !bNode.links.contains(where: { !$0.isClosed && !$0.initiator }) {
            for _ in 0..<5 {
                flood.send(Beacon(token: Self.floodToken, tcpPort: nobody).encoded, from: next % flood.count, toPort: port)
                next += 1
            }
            peer.send(Beacon(token: Self.peerToken, tcpPort: bPort).encoded, from: 0, toPort: port)
            pause(nanoseconds: 100_000_000)
        }
        let limited = a.diagnostics().field("dials_limited") ?? 0
        print("fresh-source flood: peer linked after \(Date().timeIntervalSince(start)) s, dials_limited \(limited)")
        #expect(bNode.links.contains { !$0.isClosed && !$0.initiator }, "the peer was never dialed")
        #expect(limited > 0)
    }

    @Test func aContactFoundBeforeIsDialedOutsideTheBudget() throws {
        // The peer's beacons come too seldom to count as steady (every 1.5 s, three of the
        // victim's intervals), and twenty steady sources want dials all the time: only the
        // endpoint where a contact was found before gets its dial.
        let (a, aNode, port) = try victim { $0.connectAttemptInterval = 1 }
        let (b, bNode, bPort) = try startLoopback()
        defer { a.stop(); b.stop(); withExtendedLifetime((aNode, bNode)) {} }
        let peer = try BeaconSenders(count: 1, first: 1)
        let beacon = Beacon(token: Self.peerToken, tcpPort: bPort).encoded
        let first = try waitFor("the first link", timeout: 10) { () -> FakeLink? in
            peer.send(beacon, from: 0, toPort: port)
            pause(nanoseconds: 100_000_000)
            return aNode.openLinks.first
        }
        first.authenticate()
        first.setContact(true)
        try waitUntil("the contact noted") { a.diagnostics().serialized.contains("\"peer\":\"contact\"") }
        first.endFromNode("test: the link ends")
        try waitUntil("the connection closed") { a.connectionCount == 0 }

        let nobody = freeUDPPorts(1)[0]
        let flood = try BeaconSenders(count: 20, first: 10)
        let start = Date()
        var lastPeerBeacon = Date.distantPast
        var redialed = false
        while Date().timeIntervalSince(start) < 10 {
            for i in 0..<flood.count {
                flood.send(Beacon(token: Self.floodToken, tcpPort: nobody).encoded, from: i, toPort: port)
            }
            if Date().timeIntervalSince(lastPeerBeacon) >= 1.5 {
                peer.send(beacon, from: 0, toPort: port)
                lastPeerBeacon = Date()
            }
            if aNode.links.filter({ !$0.isClosed }).count >= 1 {
                redialed = true
                break
            }
            pause(nanoseconds: 100_000_000)
        }
        print("steady flood: contact redialed \(redialed) after \(Date().timeIntervalSince(start)) s, "
              + "dials_limited \(a.diagnostics().field("dials_limited") ?? -1)")
        #expect(redialed, "the contact was not dialed again")
    }
}

/// UDP sockets bound to 127.0.0.`first`, 127.0.0.`first + 1`, …: beacons from as many sources.
final class BeaconSenders {
    private var fds: [Int32] = []
    var count: Int { fds.count }

    init(count: Int, first: Int = 2) throws {
        for i in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr = in_addr(s_addr: (UInt32(0x7f00_0000) | UInt32(first + i)).bigEndian)
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard fd >= 0, rc == 0 else {
                if fd >= 0 { close(fd) }
                throw TimedOut(what: "a UDP socket on 127.0.0.\(first + i)")
            }
            fds.append(fd)
        }
    }

    deinit { for fd in fds { close(fd) } }

    func send(_ bytes: [UInt8], from index: Int, toPort port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
        _ = bytes.withUnsafeBytes { data in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fds[index], data.baseAddress, data.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }
}
