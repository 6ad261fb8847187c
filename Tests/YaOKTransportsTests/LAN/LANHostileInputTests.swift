import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKTransports

/// What a hostile neighbour on the LAN can throw at a transport: garbage, an oversized
/// frame, silence, a thousand idle connections, a peer that never reads. Each is bounded in
/// count and time, runs on 127.0.0.1, and must leave the process alive, its memory bounded
/// and a legitimate peer still exchanging units.
@Suite(.serialized) struct LANHostileInputTests {
    @Test func anOversizedLengthPrefixClosesTheConnectionHavingBufferedNothing() throws {
        let (a, aNode, port) = try startLoopback()
        defer { a.stop() }
        let client = try RawClient(port: port)
        let link = try aNode.waitForOpenLink()
        // 65535 > the MTU: refused on the two prefix bytes, before any of the frame.
        client.write([0xff, 0xff] + [UInt8](repeating: 0x41, count: 1000))
        #expect(client.waitForClose(timeout: 2))
        try waitUntil("the link to close") { link.isClosed }
        #expect(link.closedBecause?.contains("exceeds the maximum \(LANTransport.linkMTU)") == true)
        #expect(link.units.isEmpty)
        #expect(a.connectionCount == 0)
    }

    @Test func aPeerThatDoesNotReadIsDropped() throws {
        let (a, aNode, port) = try startLoopback { $0.maxWriteQueueBytes = 64 * 1024 }
        defer { a.stop() }
        let client = try RawClient(port: port)
        client.shrinkReceiveBuffer()
        let link = try aNode.waitForOpenLink()
        let unit = [UInt8](repeating: 0x55, count: 16 * 1024)
        // The kernel's buffers take a few MB first; then the queue fills and the peer goes.
        var sent = 0
        while !link.isClosed && sent < 2_000 {
            link.send(unit)
            sent += 1
            if sent % 50 == 0 { pause(nanoseconds: 5_000_000) }
        }
        try waitUntil("the connection to be dropped", timeout: 10) { link.isClosed }
        #expect(link.closedBecause?.contains("not reading") == true)
        #expect(a.connectionCount == 0)
    }

    @Test func aPeerTricklingAFrameByteByByteIsClosedByTheHandshakeTimeout() throws {
        // Each byte resets the idle timeout; the frame never completes, so no unit arrives:
        // the handshake timeout ends it, having buffered no more than the one partial frame.
        let (a, aNode, port) = try startLoopback { $0.handshakeTimeout = 0.5; $0.idleTimeout = 0.3 }
        defer { a.stop() }
        let client = try RawClient(port: port)
        let link = try aNode.waitForOpenLink()
        client.write([0x40, 0x00])  // announces 16,384 bytes
        let start = Date()
        while Date().timeIntervalSince(start) < 5, !link.isClosed {
            client.write([0x41])
            pause(nanoseconds: 50_000_000)
        }
        try waitUntil("the link to close") { link.isClosed }
        #expect(link.closedBecause?.contains("no handshake") == true)
        #expect(link.units.isEmpty)
        #expect(a.connectionCount == 0)
    }

    @Test func aFloodOfEmptyFramesCostsNothingAndEndsWithTheHandshakeTimeout() throws {
        // Keepalive frames (length 0) carry nothing: megabytes of them are read and dropped,
        // never queued for the link, and do not pass for a handshake.
        let (a, aNode, port) = try startLoopback { $0.handshakeTimeout = 1 }
        defer { a.stop() }
        let client = try RawClient(port: port)
        let link = try aNode.waitForOpenLink()
        let rssBefore = residentKiB()
        let burst = [UInt8](repeating: 0, count: 1 << 20)  // 524,288 empty frames
        var sent = 0
        while sent < 16, client.write(burst) { sent += 1 }
        try waitUntil("the link to close", timeout: 10) { link.isClosed }
        #expect(link.units.isEmpty)
        #expect(residentKiB() - rssBefore < 16 * 1024)
        #expect(a.connectionCount == 0)
    }

    @Test func theDiscoveryPortSurvivesAFloodOfBeaconsAndJunk() throws {
        // The UDP port: thousands of beacons with fresh tokens (each new to us) from 200 source
        // addresses, oversized and malformed datagrams. Answers stay at one a second, the peer
        // table at its cap, dials within the overall budget, and a real peer is still found
        // afterwards.
        let port = freeUDPPorts(1)[0]
        let (a, aNode, _) = try startLoopback { o in
            var d = LANTransport.Options.Discovery()
            d.group = "127.0.0.1"
            d.port = port
            d.beaconInterval = 60
            o.discovery = d
        }
        defer { a.stop() }
        try waitUntil("the first beacon") { (a.diagnostics().field("discovery", "beacons_sent") ?? 0) >= 1 }
        let sources = try BeaconSenders(count: 200)
        let rssBefore = residentKiB()
        let start = Date()
        for i in 0..<5_000 {
            var token = [UInt8](repeating: 0xff, count: 16)
            token[14] = UInt8(truncatingIfNeeded: i >> 8)
            token[15] = UInt8(truncatingIfNeeded: i)
            sources.send(Beacon(token: token, tcpPort: UInt16(1 + i % 60_000)).encoded, from: i % sources.count, toPort: port)
            if i % 500 == 0 {
                sendDatagram([UInt8](repeating: 0x41, count: 60_000), toPort: port)  // truncated, ignored
                sendDatagram(Beacon.magic + [UInt8](repeating: 0xff, count: 16) + [0, 0], toPort: port)  // port 0
                sendDatagram(Beacon.magic + [UInt8](repeating: 0xff, count: 17), toPort: port)  // 21 bytes
            }
        }
        pause(nanoseconds: 300_000_000)
        let diagnostics = a.diagnostics()
        let dials = Int64(a.connectionCount) + (diagnostics.field("closed_connections") ?? 0)
        let seconds = Date().timeIntervalSince(start)
        // The first beacon, then at most one answer a second (and one for the second begun).
        #expect((diagnostics.field("discovery", "beacons_sent") ?? 0) <= 2 + Int64(seconds.rounded(.up)))
        #expect(diagnostics.serialized.components(separatedBy: "first_seen_ms").count - 1 <= 64)
        // At most the overall budget a second (and the second begun), however many sources.
        #expect(dials <= Int64(LANTransport.maxDiscoveryAttemptsPerSecond) * (1 + Int64(seconds.rounded(.up))), "\(dials) dials")
        #expect(residentKiB() - rssBefore < 16 * 1024)
        // Still working: a peer that connects gets a link.
        let client = try RawClient(port: a.listeningPort ?? 0)
        try waitUntil("the newcomer's link") { aNode.links.contains { !$0.isClosed && !$0.initiator } }
        _ = client
    }

    @Test func aFloodOfIdleAndHostileConnectionsLeavesALegitimatePeerWorking() throws {
        let limit = raiseOpenFileLimit()
        // 1,000 clients need 1,000 descriptors here plus up to `maxConnections` on the
        // transport's side; a machine with a tighter limit gets a smaller flood.
        let flood = min(1_000, max(100, limit - 400))
        let options: (inout LANTransport.Options) -> Void = {
            $0.handshakeTimeout = 1
            $0.idleTimeout = 3
            $0.keepaliveInterval = 0.5
            $0.maxWriteQueueBytes = 64 * 1024
        }
        let (a, aNode, port) = try startLoopback(echo: true, options)
        defer { a.stop() }
        let (b, bNode, _) = try startLoopback { options(&$0); $0.staticPeers = ["127.0.0.1:\(port)"] }
        defer { b.stop() }
        let legit = try bNode.waitForOpenLink()
        // On A's side the legitimate peer has finished its handshake and is a contact: the
        // one kind of connection no newcomer can evict (PROTOCOL.md §7).
        let legitAtA = try aNode.waitForOpenLink()
        legitAtA.authenticate()
        legitAtA.setContact(true)

        // The legitimate peer keeps a unit in flight all along; A echoes each one.
        // On a thread of its own: the cooperative pool can be starved by other suites' tests.
        let stop = Locked(false)
        let outcome = Locked<(rounds: Int, failure: String?)?>(nil)
        let exchanger = Thread {
            var round = 0
            var failure: String?
            while !stop.withLock({ $0 }) {
                round += 1
                let unit = [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 1 + round % 5000)
                legit.send(unit)
                do {
                    try waitFor("echo \(round)", timeout: 5) { legit.units.count >= round ? true : nil }
                } catch {
                    failure = "\(error)"
                    round -= 1
                    break
                }
            }
            let result = (round, failure)
            outcome.withLock { $0 = result }
        }
        exchanger.start()
        pause(nanoseconds: 200_000_000)
        let rssBefore = residentKiB()

        // 1. A thousand connections that never send anything.
        var idle: [RawClient] = []
        for _ in 0..<flood { idle.append(try RawClient(startingConnectTo: port)) }
        // 2. Garbage, an oversized prefix, a slow half frame, all at once.
        var garbage: [RawClient] = []
        for i in 0..<20 {
            let client = try RawClient(port: port)
            var bytes = [UInt8](repeating: 0, count: 64 * 1024)
            for j in bytes.indices { bytes[j] = UInt8(truncatingIfNeeded: (i &* 7919) ^ (j &* 31) ^ (j >> 3)) }
            client.write(bytes)
            garbage.append(client)
        }
        let oversized = try RawClient(port: port)
        oversized.write([0xff, 0xf0])
        let halfFrame = try RawClient(port: port)
        halfFrame.write([0x40, 0x00] + [UInt8](repeating: 7, count: 100))  // announces 16 KB, stalls

        // The caps hold: all from one address, never more than 8 at once; each newcomer takes
        // the slot of the oldest unfinished one (or is refused).
        try waitUntil("connections to be evicted or refused", timeout: 10) {
            (a.diagnostics().field("refused_connections") ?? 0) + (a.diagnostics().field("evicted_connections") ?? 0) > 0
        }
        #expect(a.connectionCount <= 8)
        #expect(oversized.waitForClose(timeout: 3))
        // After the handshake timeout every hostile connection is gone; the legit one stays.
        try waitUntil("the hostile connections to be closed", timeout: 15) {
            a.connectionCount == 1
        }
        #expect(halfFrame.waitForClose(timeout: 1))
        let rssAfter = residentKiB()

        pause(nanoseconds: 300_000_000)
        stop.withLock { $0 = true }
        let (roundsDuring, failure) = try waitFor("the exchanger to stop", timeout: 10) { outcome.withLock { $0 } }
        #expect(failure == nil, "the legitimate peer stalled: \(failure ?? "")")
        #expect(!legit.isClosed)
        #expect(roundsDuring > 10, "the legitimate peer exchanged \(roundsDuring) units")
        // Clients whose SYN overflowed the backlog retry for a while and are then accepted
        // (and closed after the handshake timeout) too: wait for the last of them.
        try waitUntil("only the legitimate connection", timeout: 30) { a.connectionCount == 1 }
        #expect(b.connectionCount == 1)
        // Generous: 256 connections × (one partial frame + a capped queue) is ~20 MB at worst.
        #expect(rssAfter - rssBefore < 96 * 1024, "VmRSS grew from \(rssBefore) to \(rssAfter) KiB")
        print("hostile flood: \(flood) idle connections, refused \(a.diagnostics().field("refused_connections") ?? -1), "
              + "evicted \(a.diagnostics().field("evicted_connections") ?? -1), "
              + "VmRSS \(rssBefore) → \(rssAfter) KiB, legit units exchanged \(roundsDuring)")
        _ = (idle, garbage, aNode)
    }
}
