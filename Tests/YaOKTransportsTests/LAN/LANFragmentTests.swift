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
        let rssBefore = residentKiB()
        var raw: [RawClient] = []
        for _ in 0..<clients {
            let client = try RawClient(port: port)
            client.write(stream)
            raw.append(client)
        }
        // Each is closed at its first fragment, long before the node's 10 s handshake timeout.
        for client in raw { #expect(client.waitForClose(timeout: 5)) }
        let rssAfter = residentKiB()
        try waitUntil("every connection to be gone", timeout: 10) { pair.aliceLAN.connectionCount == 0 }
        let diagnostics = try pair.alice.diagnostics().serialized
        #expect(diagnostics.contains("A fragment arrived on a stream link"))
        // Generous: reassembly before kept ~230 KB × 200 = 45 MB; now the only cost is the
        // transient read and queue buffers.
        #expect(rssAfter - rssBefore < 24 * 1024, "VmRSS grew from \(rssBefore) to \(rssAfter) KiB")
        print("LAN fragments: \(clients) connections × \(stream.count) bytes of fragments, VmRSS \(rssBefore) → \(rssAfter) KiB")
    }
}
