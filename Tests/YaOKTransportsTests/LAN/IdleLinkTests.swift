import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKNode
@testable import YaOKTransports

/// A link with nothing to carry stays up. The transports count two units on each side as
/// a finished handshake (PROTOCOL.md §5.2): the initiator's second is the keepalive the
/// responder sends on completion. Without it an idle initiator's connection was closed at
/// the transport's handshake timeout ("no handshake within 30 s") and made again, over
/// and over; BLE closes it at its own (10 s).
@Suite struct IdleLinkTests {
    @Test func anIdleLinkOutlivesTheTransportsHandshakeTimeout() throws {
        let pair = try LANPair(alice: { $0.handshakeTimeout = 1 }, bob: { o, port in
            o.staticPeers = ["127.0.0.1:\(port)"]
            o.handshakeTimeout = 1
        })
        defer { pair.close() }
        try waitUntil("Bob online at Alice's", timeout: 10) {
            (try? pair.alice.contact(pair.bobID).connection) != .neverConnected
        }
        pause(nanoseconds: 2_500_000_000)
        for lan in [pair.aliceLAN, pair.bobLAN] {
            let d = lan.diagnostics().serialized
            #expect(d.contains("\"closed_connections\":0"), "\(d)")
            // Two units each for the handshake (the initiator's second: m2's answer is the
            // responder's probe or keepalive); recognition adds the probe and a proof, the
            // responder's keepalive one more at the initiator (PROTOCOL.md §5.9); a meeting
            // (§12: the reconciliation of two empty carry stores) one or two; then it is idle.
            let units = d.firstMatch(of: /"units_received":(\d+)/).flatMap { Int($0.1) } ?? 0
            #expect((4...7).contains(units), "\(d)")
        }
    }
}
