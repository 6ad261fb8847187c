import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// An own carried copy that the carry store would refuse for its time (docs/PROTOCOL.md
/// §10.2's `checkTime`: already expired, or expiring more than 14 days + 1 h + 15 min ahead)
/// is none, its flag taken, as a copy that cannot be sealed (§12.6): the store's refusal
/// inside the batch's transaction failed the whole batch, every time, so that no copy
/// queued behind it was ever made.
@Suite(.serialized) struct OwnCopyOutOfTimeTests {
    func owed(_ node: Node) throws -> Int {
        try node.withDatabase { db in try db.rows("SELECT 1 FROM outbox WHERE carried & 2 != 0") { $0.int(0) }.count }
    }

    func copied(_ node: Node) throws -> [[UInt8]] {
        try node.withDatabase { db in try db.rows("SELECT message_id FROM carried_own") { $0.blob(0) } }
    }

    /// Sent while the wall clock was 30 days ahead, copied after it was put right: the copy
    /// (created then + 14 days) expires too far ahead of now, while its routed packet (7 days)
    /// is still alive, so its flag stays until a batch takes it. (Every later send is dated
    /// after it, `planSend`, until the clock catches up.)
    @Test func aCopyDatedTooFarAheadIsNone() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let alice = m["Alice"]
        m.clock.moveWallClock(seconds: 30 * 86_400)
        _ = try alice.send(to: carolAtAlice, text: "Sent with the clock ahead")
        m.clock.moveWallClock(seconds: -30 * 86_400)
        #expect(try owed(alice) == 1)
        #expect(try alice.makeOwnCarriedCopies() == 1)
        #expect(try copied(alice) == [])
        #expect(alice.carriedCount == 0)
        #expect(try owed(alice) == 0)
    }

    /// Owed by a process that ended and came back after the copy's lifetime: its routed
    /// packet expired too, but its outbox row (and flag) stays until the sweep, which runs
    /// after the batch.
    @Test func anExpiredCopyIsNoneAndTheNextIsMade() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let alice = m["Alice"]
        _ = try alice.send(to: carolAtAlice, text: "Sent long ago")
        m.clock.advance(seconds: 15 * 86_400)
        let recent = try alice.send(to: carolAtAlice, text: "Sent now")
        #expect(try alice.makeOwnCarriedCopies() == 2)
        #expect(try copied(alice) == [recent.messageID.bytes])
        #expect(try owed(alice) == 0)
    }
}
