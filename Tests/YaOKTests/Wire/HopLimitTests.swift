import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct HopLimitTests {
    @Test func initialValuesCoverTheRange() {
        var rng = SeededRandom(seed: 1)
        let seen = Set((0..<500).map { _ in HopLimit.initial(using: &rng) })
        #expect(seen == Set(HopLimit.initialRange))
    }

    @Test func forwardingDecrementsClampsAndStopsAtZero() {
        var rng = SeededRandom(seed: 2)
        #expect(HopLimit.forwarded(0, using: &rng) == nil)
        #expect(HopLimit.forwarded(1, using: &rng) == 0)
        #expect(HopLimit.forwarded(7, using: &rng) == 6)
        var atMax = Set<UInt8>()
        for _ in 0..<100 {
            let next = HopLimit.forwarded(255, using: &rng)
            #expect(next == HopLimit.maximum || next == HopLimit.maximum - 1)
            atMax.insert(next ?? 0)
        }
        // At the maximum both outcomes occur, so a maximum proves nothing about the origin.
        #expect(atMax.count == 2)
    }

    @Test func rewriteTouchesOnlyTheHopLimit() throws {
        var rng = SeededRandom(seed: 3)
        let header = try sampleHeader(hop: 5)
        let original = try Packet.routed(header, payload: [9, 9]).encode()
        var bytes = original
        #expect(HopLimit.rewriteForForwarding(&bytes, using: &rng))
        #expect(bytes[2] == 4)
        #expect(Array(bytes[0..<2]) + Array(bytes[3...]) == Array(original[0..<2]) + Array(original[3...]))
        var last = try Packet.routed(try sampleHeader(hop: 0), payload: [1]).encode()
        #expect(!HopLimit.rewriteForForwarding(&last, using: &rng))
        var handshake = try Packet.handshake(payload: [UInt8](repeating: 0, count: 40)).encode()
        #expect(!HopLimit.rewriteForForwarding(&handshake, using: &rng))
    }

    /// A malformed routed packet is not forwarded, and its bytes stay as they were: a
    /// forwarder must not pass on what no receiver would accept (§4.1 strict decoding).
    @Test func malformedRoutedPacketsAreNotRewritten() throws {
        var rng = SeededRandom(seed: 4)
        let good = try Packet.routed(try sampleHeader(hop: 5), payload: [1, 2, 3]).encode()
        let trailing = good + [0xff]                         // a byte after the payload
        let short = Array(good.dropLast())                   // payload cut short
        var zeroLifetime = good
        zeroLifetime[25] = 0; zeroLifetime[26] = 0           // lifetime 0 minutes
        var oversized = good
        oversized[35] = 0xff; oversized[36] = 0xff           // length over the packet limit
        for var bad in [trailing, short, zeroLifetime, oversized] {
            let before = bad
            #expect(!HopLimit.rewriteForForwarding(&bad, using: &rng))
            #expect(bad == before)
        }
    }
}
