import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// What a stranger may offer: bytes that are not a carried packet are refused by decoding
/// before anything is stored; well-formed junk is held only within the caps.
@Suite struct CarryHostileInputTests {
    @Test func malformedBytesAreRefusedAndNothingStored() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let good = try bench.packet().encode()
        var zeroBudget = good; zeroBudget[3] = 0
        var wrongVersion = good; wrongVersion[0] = 2
        var wrongType = good; wrongType[1] = 0x07
        var longer = good; longer.append(0)
        let oversized = [UInt8](good.prefix(34)) + [UInt8](repeating: 0xaa, count: Wire.maxPacketLength)
        let cases: [([UInt8], YaOKError.Code)] = [
            ([], .malformedPacket), ([1], .malformedPacket), (Array(good.prefix(33)), .malformedPacket),
            (Array(good.dropLast()), .malformedPacket), (longer, .malformedPacket), (zeroBudget, .malformedPacket),
            (wrongVersion, .unsupportedVersion), (wrongType, .unknownPacketType), (oversized, .malformedPacket),
        ]
        for (bytes, code) in cases {
            #expect(throws: YaOKError(code)) {
                try bench.store.takeCarried(bytes, from: CarryBench.alice, nowMs: bench.now)
            }
        }
        #expect(try bench.store.carryUsage() == (0, 0))
        #expect(try bench.store.carryQuotaUsed(CarryBench.alice, nowMs: bench.now) == (0, 0))
    }

    /// Thousands of random and mutated inputs: the store holds only well-formed live
    /// packets, each under its own identity, and never more than its caps.
    @Test func aFloodOfJunkStaysWithinTheCaps() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let caps = CarryPolicy(maxPackets: 50, maxBytes: 200_000, depositorPacketsPerHour: 1_000_000,
                               depositorBytesPerHour: 1 << 30)
        let seed = try bench.packet(payloadLength: 400).encode()
        var rng = SystemRandomNumberGenerator()
        for i in 0..<3_000 {
            var bytes: [UInt8]
            if i % 2 == 0 {
                bytes = Sodium.randomBytes(Int.random(in: 0...600, using: &rng))
            } else {
                bytes = seed
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: .min ... .max, using: &rng)
                }
            }
            _ = try? bench.store.takeCarried(bytes, from: CarryDepositor.random(), nowMs: bench.now, policy: caps)
        }
        let usage = try bench.store.carryUsage()
        #expect(usage.packets <= 50 && usage.bytes <= 200_000)
        for key in try bench.store.carriedKeys(nowMs: bench.now, limit: 1_000) {
            let packet = try #require(try bench.store.carriedPacket(key.id))
            #expect(packet.identity == key.id && packet.expiresAtMs == key.expiresAtMs)
            #expect(packet.copyBudget <= CopyBudget.maximum && packet.hopLimit <= HopLimit.maximum)
        }
    }

    /// A row altered in the file (its bytes no longer hash to its identity) is dropped when
    /// read, not handed on.
    @Test func anAlteredRowIsDroppedWhenRead() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let packet = try bench.packet()
        try bench.mustTake(packet)
        var altered = packet.encode()
        altered[altered.count - 1] ^= 1
        try bench.store.db.query("UPDATE carried_packets SET packet = ?", [.blob(altered)])
        #expect(try bench.store.carriedPacket(packet.identity) == nil)
        #expect(try bench.store.carryUsage().packets == 0)
    }
}
