import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// A batch of own carried copies can run inside an outer transaction (a meeting that starts
/// while the inbound drain's batch takes a link's units): if that transaction rolls back,
/// the copies and the cleared flags go with it, so the engine must still know they are
/// owed, or they are made only after the process restarts.
@Suite(.serialized) struct OwnCopyRollbackTests {
    struct Failure: Error {}

    @Test func copiesRolledBackWithAnOuterTransactionAreMadeByTheNextBatch() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Copy, rolled back once")
        // As the drain's batch: the copies are made inside it, then a later unit's store
        // failure rolls the whole batch back.
        try m["Alice"].withUnlockedEngine { engine, store, keys in
            #expect(throws: Failure.self) {
                try engine.batch(store) { e in
                    #expect(try e.makeOwnCopies(store, keys) == 1)
                    throw Failure()
                }
            }
        }
        #expect(m["Alice"].carriedCount == 0)
        #expect(m["Alice"].ownCarriedPacketID(sent.messageID) == nil)
        // The next batch makes it, once.
        try m["Alice"].makeOwnCarriedCopies()
        #expect(m["Alice"].carriedCount == 1)
        #expect(m["Alice"].ownCarriedPacketID(sent.messageID) != nil)
        try m["Alice"].makeOwnCarriedCopies()
        #expect(m["Alice"].carriedCount == 1)
    }
}
