import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// One depositor (a link) cannot fill the store: a quota of packets and bytes per clock hour.
@Suite struct CarryQuotaTests {
    private let policy = CarryPolicy(maxPackets: 100, maxBytes: 1 << 20, depositorPacketsPerHour: 5,
                                     depositorBytesPerHour: 64 << 10)

    @Test func packetsPerDepositorPerHour() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        bench.now = 1_800_000_000_000 - 1_800_000_000_000 % 3_600_000 + 60_000  // early in an hour
        for _ in 0..<5 { try bench.mustTake(try bench.packet(), policy: policy) }
        #expect(try bench.take(try bench.packet(), policy: policy) == .overQuota)
        #expect(try bench.store.carryQuotaUsed(CarryBench.alice, nowMs: bench.now) == (5, 5 * 234))
        // Another link is counted apart.
        try bench.mustTake(try bench.packet(), from: CarryBench.bob, policy: policy)
        // What was evicted or removed is not given back within the hour.
        for id in try bench.heldIDs() { try bench.store.removeCarried(id) }
        #expect(try bench.take(try bench.packet(), policy: policy) == .overQuota)
        // The next clock hour starts a new count.
        bench.now += 3_600_000
        try bench.mustTake(try bench.packet(), policy: policy)
    }

    @Test func bytesPerDepositorPerHour() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        bench.now -= bench.now % 3_600_000
        // 3 packets of 17,408 bytes fit 64 KiB; the 4th does not, a small one still does.
        let large = CarriedPacket.maxPayloadLength
        for _ in 0..<3 { try bench.mustTake(try bench.packet(payloadLength: large), policy: policy) }
        #expect(try bench.take(try bench.packet(payloadLength: large), policy: policy) == .overQuota)
        try bench.mustTake(try bench.packet(payloadLength: 100), policy: policy)
    }

    @Test func theCountSurvivesARestartAndIsSweptAfterTheHour() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        bench.now -= bench.now % 3_600_000
        for _ in 0..<5 { try bench.mustTake(try bench.packet(), policy: policy) }
        try bench.reopen()
        #expect(try bench.take(try bench.packet(), policy: policy) == .overQuota)
        bench.now += 3_600_000
        #expect(try bench.store.sweepCarried(nowMs: bench.now).quotaRows == 1)
        #expect(try bench.store.carryQuotaUsed(CarryBench.alice, nowMs: bench.now - 3_600_000) == (0, 0))
    }

    @Test func refusalsAreNotCharged() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        bench.now -= bench.now % 3_600_000
        let packet = try bench.packet()
        try bench.mustTake(packet, policy: policy)
        for _ in 0..<10 { #expect(try bench.take(packet, policy: policy) == .duplicate) }
        #expect(try bench.store.carryQuotaUsed(CarryBench.alice, nowMs: bench.now).packets == 1)
    }

    @Test func aDepositorTokenIsBounded() {
        #expect(throws: YaOKError(.invalidArgument)) { try CarryDepositor([]) }
        #expect(throws: YaOKError(.invalidArgument)) { try CarryDepositor([UInt8](repeating: 1, count: 33)) }
        #expect(CarryDepositor.random() != CarryDepositor.random())
    }

    @Test func aPolicyThatCouldHoldNothingIsRefused() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        for bad in [CarryPolicy(maxPackets: 0), CarryPolicy(maxBytes: 1000), CarryPolicy(depositorPacketsPerHour: 0),
                    CarryPolicy(depositorBytesPerHour: 17_407), CarryPolicy(maxPurgeRecords: 0)] {
            #expect(throws: YaOKError(.invalidArgument)) { try bench.take(try bench.packet(), policy: bad) }
        }
        #expect(try bench.store.carryUsage().packets == 0)
    }
}
