import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A lock wipes the keys (docs/PROTOCOL.md §10.3: the pair keys are kept while unlocked).
@Suite struct CarryLockTests {
    /// The carried tag table holds each contact's route pair key (to add each new day's
    /// tags). Before the fix a lock left it in memory: a reader of a locked node's memory
    /// could compute every routing tag of every pair, direct and carried, for any day.
    @Test func aLockDropsTheCarriedTagTableAndItsPairKeys() throws {
        let m = try Meeting(["Alice", "Carol"])
        defer { m.finish() }
        try m.befriend("Alice", "Carol")
        let built = try m["Alice"].withEngine { engine, store, keys -> Int in try engine.carriedTags(store, keys)?.count ?? 0 }
        #expect(built == CarriedTagTable<Int64>.epochCount)
        try m["Alice"].lock()
        #expect(m["Alice"].state.withLock { $0.delivery.carry.tags == nil })
        // Unlocked again, the table is rebuilt from the keys.
        try m["Alice"].unlock(pin: testPIN)
        let rebuilt = try m["Alice"].withEngine { engine, store, keys -> Int in try engine.carriedTags(store, keys)?.count ?? 0 }
        #expect(rebuilt == CarriedTagTable<Int64>.epochCount)
    }
}
