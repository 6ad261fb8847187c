import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// US-022 with a virtual clock: failed attempts retry after exactly 1, 5, 15, 60, 60 minutes.
@Suite struct RetryScheduleTests {
    @Test func failedAttemptsFollowTheSchedule() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { pair.alice.linkIsOpen(to: pair.bobID) && pair.bob.linkIsOpen(to: pair.aliceID) })
        pipe.drop { _ in true }  // the radio goes deaf: no receipt will come back
        let m = try pair.alice.send(to: pair.bobID, text: "are you there?")
        #expect(eventually { pair.alice.inflightCount == 1 })

        var expectedAttempts = 0
        for delay in [1, 5, 15, 60, 60] as [Int64] {
            clock.advance(seconds: RetrySchedule.attemptTimeoutMs / 1000)
            pair.alice.runDeliveryTimers()
            expectedAttempts += 1
            let entry = try #require(try pair.alice.outbox().first)
            #expect(entry.status == .failed)
            #expect(entry.attempts == expectedAttempts)
            #expect(entry.nextAttemptAt == clock.now + delay * 60_000)
            // Nothing goes out before the retry is due…
            clock.advance(seconds: delay * 60 - 1)
            pair.alice.runDeliveryTimers()
            #expect(pair.alice.inflightCount == 0)
            // …and it goes at the due time.
            clock.advance(seconds: 1)
            pair.alice.runDeliveryTimers()
            #expect(pair.alice.inflightCount == 1)
        }
        // The radio recovers: the next attempt is confirmed and acknowledged.
        pipe.drop(nil)
        clock.advance(seconds: RetrySchedule.attemptTimeoutMs / 1000)
        pair.alice.runDeliveryTimers()
        _ = try? pair.alice.retry(m.messageID)  // it may already be on its way
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == ["are you there?"])
    }

    @Test func manualRetryGoesAtOnceAndANewLinkToo() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        #expect(eventually { pair.alice.linkIsOpen(to: pair.bobID) && pair.bob.linkIsOpen(to: pair.aliceID) })
        pipe.drop { _ in true }
        let m = try pair.alice.send(to: pair.bobID, text: "hello")
        #expect(eventually { pair.alice.inflightCount == 1 })
        pipe.close()  // the link drops with the packet in flight: a failed attempt
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .failed })
        #expect(try pair.alice.outbox().first?.waitingForTransport == true)
        // A new link to Bob sends it at once, without waiting the minute.
        let again = try MemoryPipe(pair.alice, pair.bob)
        defer { again.close() }
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
    }

    @Test func scheduleValues() {
        #expect((1...7).map { RetrySchedule.delay(afterAttempts: $0) / 60_000 } == [1, 5, 15, 60, 60, 60, 60])
    }
}

extension Node {
    func linkIsOpen(to contact: Int64) -> Bool {
        state.withLock { s in s.delivery.links.values.contains { $0.isOpen && $0.contactID == contact } }
    }

    var inflightCount: Int { state.withLock { $0.delivery.inflight.count } }
}
