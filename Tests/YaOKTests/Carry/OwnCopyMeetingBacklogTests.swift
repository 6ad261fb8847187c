import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// A meeting that starts with more copies owed than a batch makes (docs/PROTOCOL.md §12.6):
/// the oldest `OwnCopyQueue.batchLimit` are made before its snapshot, which offers them; the
/// rest follow on the timer, due at once, each batch's offered on the meeting as it is made.
@Suite(.serialized) struct OwnCopyMeetingBacklogTests {
    /// The messages Alice holds an own copy of, in no particular order.
    func copied(_ node: Node) throws -> [[UInt8]] {
        try node.withDatabase { db in try db.rows("SELECT message_id FROM carried_own") { $0.blob(0) } }
    }

    @Test func aMeetingStartingWith70OwedOffersTheOldest32AndTheRestAsMade() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let alice = m["Alice"], bob = m["Bob"]
        let sent = try alice.send((0..<70).map { (carolAtAlice, "Owed \($0)") }).map(\.messageID.bytes)
        m.clock.advance(seconds: 1)
        #expect(alice.carriedCount == 0)

        let pipe = try m.link("Alice", "Bob") { alice.carryIdle && bob.carryIdle }
        defer { pipe.close() }
        // Made before the snapshot (no timer ran): the oldest 32, which the meeting offered.
        #expect(Set(try copied(alice)) == Set(sent.prefix(OwnCopyQueue.batchLimit)))
        #expect(eventually { bob.carriedCount == OwnCopyQueue.batchLimit })
        let due = try alice.withEngine { engine, _, _ in engine.carry.ownCopies.timerDue }
        #expect(try #require(due) <= m.clock.now)

        // The rest, at most a batch per turn of the timer, due at once while any is owed,
        // each offered as it is made. Two turns for 38: the meeting's batch ran inside the
        // drain's transaction, so its 32 stayed queued, and the first turn takes them off
        // without reading their flags (the drain committed, no rollback since:
        // `OwnCopyQueue.settledInside`) and makes the next 32.
        var made = OwnCopyQueue.batchLimit, turns = 0
        while made < sent.count, turns < 5 {
            alice.runOwnCopyTimer()
            turns += 1
            let now = try copied(alice).count
            #expect(now - made <= OwnCopyQueue.batchLimit)
            #expect(eventually { bob.carriedCount == now })
            made = now
            if made < sent.count {
                let due = try alice.withEngine { engine, _, _ in engine.carry.ownCopies.timerDue }
                #expect(try #require(due) <= m.clock.now)
            }
        }
        #expect(turns == 2)

        // Every message's copy, once.
        let copies = try copied(alice)
        #expect(copies.count == sent.count)
        #expect(Set(copies) == Set(sent))
        #expect(alice.carriedCount == sent.count)
        #expect(try alice.makeOwnCarriedCopies() == 0)
        #expect(alice.carriedCount == sent.count)
        #expect(eventually { alice.carryIdle && bob.carryIdle })
        #expect(bob.carriedCount == sent.count)
    }
}
