import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKNode
@testable import YaOKTransports

/// A stream carries every packet whole (PROTOCOL.md §4.6), so a LAN link refuses fragments
/// (§4.7): a peer that sends one has its link closed at once, and nothing of it is kept for
/// reassembly. Before, 200 connections sending fragments raised a node's memory by ~64 MB.
@Suite(.serialized) struct LANFragmentTests {
    @Test func fragmentsOnALANLinkCloseItAndCostNoMemory() throws {
        _ = raiseOpenFileLimit()
        let pair = try LANPair(bob: { _, _ in })  // Alice alone matters; Bob dials nobody
        defer { pair.close() }
        let port = pair.aliceLAN.listeningPort ?? 0
        let clients = 200
        // Per connection: 16 groups of 7 pieces of 2,000 bytes (the last piece never comes),
        // ~230 KB, just under a reassembler's 256 KiB bound: all of it would be kept.
        var stream: [UInt8] = []
        for group in 0..<16 {
            for index in 0..<7 {
                var unit: [UInt8] = [Wire.version, PacketType.fragment.rawValue, 0, UInt8(group), 0, UInt8(index), 0, 8]
                unit += [UInt8](repeating: UInt8(truncatingIfNeeded: group &* 31 &+ index), count: 2_000)
                stream += try Frame.encode(unit)
            }
        }
        let first = try Frame.encode(Array(stream.prefix(2 + 8 + 2_000).dropFirst(2)))  // one fragment, framed
        let rssBefore = residentKiB()
        // 1. One fragment on each connection, each from an address of its own (127.0.0.2 …),
        //    so the per-address cap does not bound them: only the refusal of fragments does.
        var raw: [RawClient] = []
        for i in 0..<clients {
            let client = try RawClient(port: port, from: 0x7f00_0002 + UInt32(i))
            client.write(first)
            raw.append(client)
        }
        // Each is closed at that fragment, long before the node's 10 s handshake timeout.
        do {
            try waitUntil("every connection to be closed", timeout: 5) {
                (pair.aliceLAN.diagnostics().field("closed_connections") ?? 0) >= Int64(clients)
            }
        } catch {
            Issue.record("\(pair.aliceLAN.connectionCount) connections still open: \(error)")
        }
        // 2. The rest of the fragments, on connections that should be gone: whatever still
        //    takes them would be kept for reassembly.
        for client in raw { client.write(stream) }
        pause(nanoseconds: 500_000_000)
        let rssAfter = residentKiB()
        for client in raw { #expect(client.waitForClose(timeout: 0.5)) }
        let diagnostics = try pair.alice.diagnostics().serialized
        #expect(diagnostics.contains("A fragment arrived on a stream link"))
        // Reassembly before kept ~230 KB × 200 = 45 MB; now nothing is kept.
        #expect(rssAfter - rssBefore < 16 * 1024, "VmRSS grew from \(rssBefore) to \(rssAfter) KiB")
        print("LAN fragments: \(clients) connections × \(stream.count) bytes of fragments, VmRSS \(rssBefore) → \(rssAfter) KiB")
    }

    @Test func aFragmentAfterTheHandshakeClosesTheLinkToo() throws {
        // A contact's link, handshake done: a fragment on it still ends it at once (a stream
        // has no corruption that would excuse one), and the static peer's reconnection works.
        let pair = try LANPair(bob: { o, port in
            o.staticPeers = ["127.0.0.1:\(port)"]
            o.reconnectDelay = 0.1
        })
        defer { pair.close() }
        _ = try pair.bob.send(to: pair.aliceID, text: "before")
        try waitUntil("the first message", timeout: 10) { try pair.alice.texts(pair.bobID) == ["before"] }
        let id = try #require(pair.bobLAN.state.withLock { $0.connections.keys.first })
        let fragment: [UInt8] = [Wire.version, PacketType.fragment.rawValue, 0x12, 0x34, 0, 0, 0, 2] + [UInt8](repeating: 7, count: 100)
        let bobLAN = pair.bobLAN
        pair.bob.eventLoop.post { bobLAN.linkSend(id, [fragment]) }
        try waitUntil("Alice to close the link", timeout: 5) {
            try pair.alice.diagnostics().serialized.contains("A fragment arrived on a stream link")
        }
        _ = try pair.bob.send(to: pair.aliceID, text: "after")
        try waitUntil("the message after the reconnection", timeout: 15) { try pair.alice.texts(pair.bobID).contains("after") }
    }
}
