import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// While the app keeps sending, the own carried copies wait for a pause (OwnCopyQueue.quietMs),
/// at most `maxDeferMs` after the oldest send owing one; a meeting that could carry them does
/// not wait (docs/PROTOCOL.md §12.6, "Sending").
@Suite struct OwnCopyPauseTests {
    private func queue(sendsEvery step: Int64, from start: Int64, until end: Int64) -> OwnCopyQueue {
        var queue = OwnCopyQueue()
        for t in stride(from: start, through: end, by: Int(step)) { queue.append([(MessageID.random(), 1)], at: t) }
        return queue
    }

    @Test func aLoneSendIsDueAfterTheUsualDelay() {
        let queue = queue(sendsEvery: 1, from: 1_000, until: 1_000)
        #expect(queue.due(meetings: []) == 1_000 + OwnCopyQueue.delayMs)
        #expect(!queue.waitsForPause(at: 1_000 + OwnCopyQueue.delayMs, meetings: []))
    }

    @Test func sendsThatKeepComingMoveTheBatchToTheirPause() {
        // A send every 40 ms for 2 s: due 50 ms after the last, not 500 ms after the first.
        let queue = queue(sendsEvery: 40, from: 1_000, until: 3_000)
        #expect(queue.due(meetings: []) == 3_000 + OwnCopyQueue.quietMs)
        #expect(queue.waitsForPause(at: 1_000 + OwnCopyQueue.delayMs, meetings: []))
        #expect(queue.waitsForPause(at: 3_049, meetings: []))
        #expect(!queue.waitsForPause(at: 3_050, meetings: []))
    }

    @Test func aBurstThatNeverPausesWaitsNoLongerThanTheBound() {
        let queue = queue(sendsEvery: 10, from: 1_000, until: 9_000)
        #expect(queue.due(meetings: []) == 1_000 + OwnCopyQueue.maxDeferMs)
        #expect(!queue.waitsForPause(at: 1_000 + OwnCopyQueue.maxDeferMs, meetings: []))
    }

    /// A batch of 32 that leaves copies owed does not restart the delays (PROTOCOL.md §12.6:
    /// they count from the first send owed since none was): the rest are due at once, and a
    /// burst past its bound waits no more.
    @Test func aPartialBatchDoesNotRestartTheDelays() {
        var paused = queue(sendsEvery: 1, from: 1_000, until: 1_039)
        paused.remove(Set(paused.messages.prefix(OwnCopyQueue.batchLimit)))
        #expect(paused.messages.count == 40 - OwnCopyQueue.batchLimit)
        #expect(paused.due(meetings: []) == 1_000 + OwnCopyQueue.delayMs)
        var burst = queue(sendsEvery: 10, from: 1_000, until: 9_000)
        burst.remove(Set(burst.messages.prefix(OwnCopyQueue.batchLimit)))
        #expect(burst.due(meetings: []) == 1_000 + OwnCopyQueue.maxDeferMs)
        #expect(!burst.waitsForPause(at: 9_000, meetings: []))
    }

    @Test func aMeetingThatCouldCarryThemDoesNotWait() {
        let queue = queue(sendsEvery: 10, from: 1_000, until: 3_000)
        // A stranger (nil), or a contact other than the recipient (2): the short delay.
        for meetings: [Int64?] in [[nil], [2]] {
            #expect(queue.due(meetings: meetings) == 1_000 + OwnCopyQueue.meetingDelayMs)
            #expect(!queue.waitsForPause(at: 2_000, meetings: meetings))
        }
        // The recipient of every copy (1) is no such meeting.
        #expect(queue.due(meetings: [1]) == 3_000 + OwnCopyQueue.quietMs)
    }

    /// The timers of a node: a burst of sends 40 ms apart gets no copy while it lasts (the
    /// copies' timer and the delivery timer both pass), all of them at its pause.
    @Test func aNodeMakesTheCopiesOfABurstAtItsPause() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        for i in 0..<25 {
            _ = try m["Alice"].send(to: carolAtAlice, text: "burst \(i)")
            m.clock.advance(milliseconds: 40)
            m["Alice"].runOwnCopyTimer()
            m["Alice"].runDeliveryTimers()
            #expect(m["Alice"].carriedCount == 0, "a copy made during the burst, at send \(i)")
        }
        let due = try #require(m["Alice"].state.withLock { $0.delivery.carry.ownCopies.timerDue })
        #expect(due == m.clock.now - 40 + OwnCopyQueue.quietMs)
        m.clock.advance(milliseconds: 20)
        m["Alice"].runOwnCopyTimer()
        #expect(m["Alice"].carriedCount == 25)
    }
}
