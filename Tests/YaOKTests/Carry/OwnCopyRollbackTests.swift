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

/// The own carried copy of a message whose group commit is written but not synced yet
/// (UnsyncedSends) waits for that sync, as its routed packet does: a meeting that starts in
/// between (it makes the copies owed before its snapshot) would otherwise offer the copy to
/// the recipient, whose ack could reach the app as MESSAGE_STATUS_CHANGED before the
/// message's MESSAGE_STORED.
@Suite(.serialized) struct OwnCopyUnsyncedTests {
    @Test func noCopyIsMadeOfAMessageBeforeItsGroupSynced() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let alice = m["Alice"]
        let (ticket, id, sealed) = try alice.plannedSend(to: carolAtAlice, "Copy after the sync")
        var madeBeforeSync: Int?
        let result = alice.sendCommits.commit(ticket: ticket, sealed) { group in
            let written = try alice.writeSendGroup(group)
            madeBeforeSync = try alice.makeOwnCarriedCopies()
            return written
        }
        _ = try result.get()
        #expect(madeBeforeSync == 0)
        #expect(alice.ownCarriedPacketID(id) == nil)
        try alice.makeOwnCarriedCopies()
        #expect(alice.ownCarriedPacketID(id) != nil)
        #expect(alice.carriedCount == 1)
    }
}
