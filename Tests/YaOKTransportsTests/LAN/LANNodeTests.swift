import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode
@testable import YaOKTransports

/// Two real nodes (handshake, encryption, delivery, acknowledgements) talking over the LAN
/// transport on 127.0.0.1, registered with the node's transport manager as an app would.
@Suite(.serialized) struct LANNodeTests {
    @Test func twoNodesExchangeMessagesOverTCP() throws {
        let pair = try LANPair()
        defer { pair.close() }
        let hello = try pair.alice.send(to: pair.bobID, text: "Hello Bob, over the LAN")
        try waitUntil("Bob to receive it", timeout: 10) { try pair.bob.texts(pair.aliceID) == ["Hello Bob, over the LAN"] }
        try waitUntil("the acknowledgement") { try pair.alice.messageStatus(hello.messageID) == .delivered }
        _ = try pair.bob.send(to: pair.aliceID, text: "Hi Alice")
        try waitUntil("Alice to receive the reply") { try pair.alice.texts(pair.bobID).contains("Hi Alice") }

        // A 5 KB message on a link that is up: latency from send to Bob's history.
        let text = String(repeating: "0123456789abcdef", count: 320)  // 5,120 bytes
        let start = Date()
        _ = try pair.alice.send(to: pair.bobID, text: text)
        try waitUntil("the 5 KB message", timeout: 2) { try pair.bob.texts(pair.aliceID).contains(text) }
        let ms = Date().timeIntervalSince(start) * 1000
        print("LAN loopback: 5 KB message arrived in \(Int(ms)) ms")

        #expect(pair.aliceLAN.connectionCount == 1 && pair.bobLAN.connectionCount == 1)
        let transports = try pair.alice.diagnostics().serialized
        #expect(transports.contains("\"display_name\":\"WiFi\""))
        #expect(transports.contains("\"direction\":\"inbound\""))
        #expect(!transports.contains("Bob\",\"direction"))  // the transport names nobody
        #expect(pair.bob.transports().first?.phase == .running)
    }

    /// Sends from several app threads at once, each flushing its units onto the LAN link
    /// itself while the others and the event thread (receipts, acks) do too: one flusher at
    /// a time, so every message arrives once, each thread's in the order sent (ThreadSanitizer
    /// runs this suite).
    @Test func sendsFromSeveralThreadsAtOnceEachArriveOnceInOrder() throws {
        let pair = try LANPair()
        defer { pair.close() }
        _ = try pair.alice.send(to: pair.bobID, text: "first")
        try waitUntil("the first message", timeout: 10) { try pair.bob.texts(pair.aliceID) == ["first"] }
        let (alice, bobID) = (pair.alice, pair.bobID)
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<25 where (try? alice.send(to: bobID, text: "thread \(t) message \(i)")) == nil {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        try waitUntil("all 101 messages", timeout: 20) { try pair.bob.texts(pair.aliceID).count >= 101 }
        let texts = try pair.bob.texts(pair.aliceID)
        #expect(texts.count == 101)
        for t in 0..<4 {
            #expect(texts.filter { $0.hasPrefix("thread \(t) ") } == (0..<25).map { "thread \(t) message \($0)" })
        }
    }

    @Test func nodesFindEachOtherByBeacons() throws {
        let ports = freeUDPPorts(2)
        func discovery(listen: UInt16, sendTo: UInt16) -> LANTransport.Options.Discovery {
            var d = LANTransport.Options.Discovery()
            d.group = "127.0.0.1"  // unicast beacons: nothing leaves this host
            d.port = sendTo
            d.receivePort = listen
            d.beaconInterval = 0.2
            return d
        }
        let start = Date()
        let pair = try LANPair(alice: { $0.discovery = discovery(listen: ports[0], sendTo: ports[1]) },
                               bob: { o, _ in o.discovery = discovery(listen: ports[1], sendTo: ports[0]) })
        defer { pair.close() }
        _ = try pair.bob.send(to: pair.aliceID, text: "found you")
        try waitUntil("Alice to receive it", timeout: 10) { try pair.alice.texts(pair.bobID) == ["found you"] }
        print("LAN loopback discovery: first message after \(Int(Date().timeIntervalSince(start) * 1000)) ms")
        pause(nanoseconds: 600_000_000)  // three more beacons each way
        #expect(pair.aliceLAN.connectionCount == 1 && pair.bobLAN.connectionCount == 1)
    }

    @Test func aHandshakeThatNeverFinishesIsClosed() throws {
        let pair = try LANPair(alice: { $0.handshakeTimeout = 0.5 })
        defer { pair.close() }
        let client = try RawClient(port: pair.aliceLAN.listeningPort ?? 0)
        client.write(handshakeM1())
        // The node answers m1 with m2 (101 bytes, framed: §5.8), then waits for an m3 that never comes.
        let m2 = client.read(count: 103, timeout: 3)
        #expect(m2.count == 103 && m2.prefix(7) == [0x00, 0x65, 0x01, 0x03, 0x00, 0x61, 0x12])
        let start = Date()
        #expect(client.waitForClose(timeout: 5))
        #expect(Date().timeIntervalSince(start) < 3)
        #expect(try pair.alice.diagnostics().serialized.contains("no handshake within"))
    }

    /// §5.8: a node does not answer the certified handshake's m1 (its m2 would carry the
    /// node's certificate, so its identity, to whoever connected): the connection ends with
    /// nothing sent.
    @Test func aCertifiedHandshakeM1GetsNoAnswer() throws {
        let pair = try LANPair()
        defer { pair.close() }
        let client = try RawClient(port: pair.aliceLAN.listeningPort ?? 0)
        client.write(handshakeM1(step: 0x01))
        #expect(client.read(count: 1, timeout: 3).isEmpty)  // returns at the close, or after 3 s
        #expect(client.waitForClose(timeout: 5))
    }

    @Test func aHostileCrowdDoesNotStopRealMessages() throws {
        let limit = raiseOpenFileLimit()
        let flood = min(1_000, max(100, limit - 400))
        let pair = try LANPair(alice: { $0.handshakeTimeout = 1 })
        defer { pair.close() }
        _ = try pair.alice.send(to: pair.bobID, text: "warm-up")
        try waitUntil("the first message", timeout: 10) { try pair.bob.texts(pair.aliceID) == ["warm-up"] }
        let port = pair.aliceLAN.listeningPort ?? 0
        let rssBefore = residentKiB()

        var hostile: [RawClient] = []
        for _ in 0..<flood { hostile.append(try RawClient(startingConnectTo: port)) }
        for i in 0..<20 {  // garbage
            let client = try RawClient(startingConnectTo: port)
            pause(nanoseconds: 1_000_000)
            var bytes = [UInt8](repeating: 0, count: 32 * 1024)
            for j in bytes.indices { bytes[j] = UInt8(truncatingIfNeeded: (i &* 7919) ^ (j &* 31) ^ (j >> 5)) }
            client.write(bytes)
            hostile.append(client)
        }
        for _ in 0..<10 {  // handshakes that stop after m1
            let client = try RawClient(startingConnectTo: port)
            pause(nanoseconds: 1_000_000)
            client.write(handshakeM1())
            hostile.append(client)
        }
        let oversized = try RawClient(startingConnectTo: port)
        pause(nanoseconds: 1_000_000)
        oversized.write([0xff, 0xff])

        // Meanwhile Alice keeps talking to Bob.
        var sent: [String] = []
        for i in 0..<30 {
            let text = "during the flood \(i)"
            _ = try pair.alice.send(to: pair.bobID, text: text)
            sent.append(text)
            pause(nanoseconds: 100_000_000)
        }
        try waitUntil("every message", timeout: 15) { try Set(pair.bob.texts(pair.aliceID)).isSuperset(of: sent) }
        try waitUntil("the crowd to be gone", timeout: 30) { pair.aliceLAN.connectionCount == 1 }
        let rssAfter = residentKiB()
        #expect(pair.bobLAN.connectionCount == 1)
        #expect(rssAfter - rssBefore < 96 * 1024, "VmRSS grew from \(rssBefore) to \(rssAfter) KiB")
        print("hostile crowd with real nodes: \(hostile.count + 1) connections, refused "
              + "\(pair.aliceLAN.diagnostics().field("refused_connections") ?? -1), VmRSS \(rssBefore) → \(rssAfter) KiB")
        _ = hostile
    }

    @Test func closingANodeStopsItsTransport() throws {
        let pair = try LANPair(bob: { o, port in
            o.staticPeers = ["127.0.0.1:\(port)"]
            o.reconnectDelay = 0.05
        })
        defer { pair.close() }
        try waitUntil("a link", timeout: 10) { pair.bobLAN.connectionCount == 1 && pair.aliceLAN.connectionCount == 1 }
        pair.alice.close()
        #expect(pair.aliceLAN.listeningPort == nil)
        #expect(pair.aliceLAN.connectionCount == 0)
        try waitUntil("Bob to notice") { pair.bobLAN.diagnostics().serialized.contains("\"connected\":false") }
        _ = try pair.bob.send(to: pair.aliceID, text: "anyone there?")  // queued, nothing breaks
    }

    @Test func aNodeNobodyClosesIsFreedAndStopsItsTransport() throws {
        let dir = NSTemporaryDirectory() + "yaok-lan-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lan = try LANTransport(options: loopbackOptions { $0.keepaliveInterval = 0.05 })  // busy ticks
        weak var weakNode: Node?
        do {
            var options = Node.Options()
            options.pinHashing = .insecureFastForTestsOnly
            options.allowTestOnlyKDFCosts = true
            let node = try Node(dataDirectory: dir, options: options)
            _ = try node.setup(name: "Alice", pin: "246810", confirmation: "246810")
            try node.addTransport(lan)
            try node.setTransport("lan", enabled: true)
            let client = try RawClient(port: lan.listeningPort ?? 0)  // a link in progress too
            try waitUntil("the connection") { lan.connectionCount == 1 }
            _ = client
            weakNode = node
        }  // the last reference goes: no cycle through the transport keeps the node alive
        try waitUntil("the node to be freed") { weakNode == nil }
        try waitUntil("the transport to stop") { lan.listeningPort == nil }
        #expect(lan.connectionCount == 0)
    }
}

/// A framed handshake m1 (PROTOCOL.md §5.2): 01 03 0021 01 || a random ephemeral key.
/// A framed m1 of the anonymous handshake (§5.8, step 0x11), or of the certified one (step 1).
func handshakeM1(step: UInt8 = 0x11) -> [UInt8] {
    let packet: [UInt8] = [0x01, 0x03, 0x00, 0x21, step] + (0..<32).map { _ in UInt8.random(in: 1...255) }
    return [0x00, UInt8(packet.count)] + packet
}
