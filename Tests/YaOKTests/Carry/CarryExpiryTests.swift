import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// A packet past its expiry is dropped everywhere (docs/PROTOCOL.md §10.2): never listed,
/// never handed on, deleted by the sweep.
@Suite struct CarryExpiryTests {
    @Test func theSweepDeletesExpiredPacketsOnly() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let soon = try bench.packet(lifetimeMs: 3_600_000)
        let later = try bench.packet(lifetimeMs: 3 * 3_600_000)
        try bench.mustTake(soon)
        try bench.mustTake(later)
        bench.now = soon.expiresAtMs - 1
        #expect(try bench.store.sweepCarried(nowMs: bench.now).packets == 0)
        bench.now = soon.expiresAtMs
        // Listed no more, even before the sweep.
        #expect(try bench.heldIDs() == Set([later.identity]))
        #expect(try bench.store.carriedCount(nowMs: bench.now) == 1)
        #expect(try bench.store.carriedEntries(nowMs: bench.now, limit: 10).map(\.id) == [later.identity])
        // A range whose lower bound lies before now still lists only live packets.
        let before = CarryKey(expiresAtMs: soon.expiresAtMs - 1, id: [])
        #expect(try bench.store.carriedKeys(from: before, nowMs: bench.now, limit: 10).map(\.id) == [later.identity])
        #expect(try bench.store.carriedCount(from: before, below: CarryKey(expiresAtMs: later.expiresAtMs, id: []),
                                             nowMs: bench.now) == 0)
        #expect(try bench.store.sweepCarried(nowMs: bench.now).packets == 1)
        #expect(try bench.store.carriedEntry(soon.identity) == nil)
        #expect(try bench.store.carryUsage().packets == 1)
    }

    @Test func anExpiredOrOverLongPacketIsNotTaken() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let packet = try bench.packet(lifetimeMs: 3_600_000)
        bench.now = packet.expiresAtMs
        #expect(throws: YaOKError(.expired)) { try bench.take(packet) }
        // An expiry further ahead than 14 days + 1 h + 15 min would pin it in every store.
        var tooLong = try bench.packet()
        tooLong.expiryHour = UInt32((bench.now + CarriedPacket.maxExpiryAheadMs) / CarriedPacket.hourMs + 2)
        #expect(throws: YaOKError(.malformedPacket)) { try bench.take(tooLong) }
        #expect(try bench.store.carryUsage().packets == 0)
    }
}
