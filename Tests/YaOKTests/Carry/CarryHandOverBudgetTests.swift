import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// What one node hands over per clock hour, over all its links (docs/PROTOCOL.md §12.3 step
/// 4). Strangers are unlinkable, so a stranger that links again and again, claiming an
/// empty store each time, got up to 256 KiB of packets per link for a few requests of 16
/// bytes an identity: a battery and airtime drain ~1,000 times its own bytes, repeatable
/// without end. The hourly bound caps what every stranger together can pull.
@Suite struct CarryHandOverBudgetTests {
    @Test func strangersTogetherPullNoMoreThanTheHourlyBound() throws {
        let m = try Meeting(["Bob", "M1", "M2"])
        defer { m.finish() }
        let bench = try CarryBench()
        defer { bench.finish() }
        bench.now = m.clock.now
        // Bob holds ten packets of 434 bytes (400 of payload), each may still spread.
        for _ in 0..<10 {
            let bytes = try bench.packet(payloadLength: 400).encode()
            let taken = m["Bob"].state.withLock { s in
                try? s.store?.takeCarried(bytes, from: CarryBench.alice, nowMs: s.delivery.now)
            }
            guard case .taken? = taken else { Issue.record("not taken"); return }
        }
        // A bound of three packets' bytes for the test (the default is 64 MiB).
        m["Bob"].state.withLock { $0.delivery.carry.handOverBytesPerHour = 3 * 434 }
        try m.meet("M1", "Bob") { m["M1"].carriedCount >= 3 }
        func m2Asked() -> Bool { m["M2"].state.withLock { $0.delivery.carry.sessions.values.contains { !$0.asked.isEmpty } } }
        try m.meet("M2", "Bob", until: m2Asked)
        // M1 got what the bound allows (the packet that crosses it goes whole), M2 nothing.
        #expect((3...4).contains(m["M1"].carriedCount))
        #expect(m["M2"].carriedCount == 0)
        // The next hour M2 gets its share.
        m.clock.advance(seconds: 3_600)
        try m.meet("M2", "Bob") { m["M2"].carriedCount >= 3 }
        #expect((3...4).contains(m["M2"].carriedCount))
    }
}
