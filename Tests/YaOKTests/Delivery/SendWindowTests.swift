import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The send window (`Node.linkWindowBytes`): receipts pace a backlog, so a sender never has
/// more unconfirmed on a link than the receiver's queue and the transports' write queues hold.
@Suite struct SendWindowTests {
    static let big = String(repeating: "w", count: 10_000)

    /// A batch is due at once, all of it: with the clock standing still, every message goes
    /// out in the send's own pump. (Queued at their sender times, which step a millisecond a
    /// message, they went one a millisecond: LAN batches were capped at ~1,000/s.)
    @Test func aBatchIsDueAtOnceNotOneAMillisecond() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { pair.alice.linkIsOpen(to: pair.bobID) && pair.bob.linkIsOpen(to: pair.aliceID) })
        pipe.drop { _ in true }  // no receipt: what went out stays in flight
        _ = try pair.alice.send((0..<20).map { (pair.bobID, "batch \($0)") })
        #expect(pair.alice.inflightCount == 20)
        #expect(try pair.alice.outbox().allSatisfy { $0.nextAttemptAt <= clock.now })
    }

    @Test func aLinkThatConfirmsNothingGetsOnlyAWindowOfPackets() throws {
        let pair = try Pair()
        defer { pair.close() }
        // Routed packets only: what the meeting hands over (its own window) would count as
        // large units too. (Under ThreadSanitizer the sends outlast the own copies' timer,
        // whose batches, made between Bob's probe and his proof, were offered to him and
        // handed over, most likely; since OwnCopyRecognitionTests they wait for the proof.)
        try pair.alice.setCarry(mode: .off)
        _ = try pair.alice.send((0..<60).map { (pair.bobID, "\($0) " + Self.big) })
        // Every large unit is lost, so no receipt ever comes back.
        let large = Locked<[Int]>([])
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        pipe.drop { unit in
            guard unit.count > 9_000 else { return false }
            large.withLock { $0.append(unit.count) }
            return true
        }
        #expect(eventually { !large.withLock { $0 }.isEmpty })
        usleep(500_000)
        let sizes = large.withLock { $0 }
        let unit = try #require(sizes.max())
        // The window is full with the packet that crosses it, and nothing goes after that.
        #expect(sizes.count == (Node.linkWindowBytes + unit - 1) / unit)
    }

    @Test func aBacklogLargerThanTheReceiversQueueArrivesWithoutAFailedAttempt() throws {
        let pair = try Pair()
        defer { pair.close() }
        let events = EventRecorder()
        events.attach(to: pair.alice)
        // 1.5 MB: more than a receiver queues for one link (Node.maxQueuedBytesPerLink).
        let count = 150
        #expect(count * 10_000 > Node.maxQueuedBytesPerLink)
        let ids = try pair.alice.send((0..<count).map { (pair.bobID, "\($0) " + Self.big) }).map(\.messageID)
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { ids.allSatisfy { (try? pair.alice.status(of: $0)) == .delivered } })
        let failed = events.all.filter { if case .messageStatusChanged(let m) = $0 { m.status == .failed } else { false } }
        #expect(failed.count == 0)
        #expect(try pair.bob.texts(pair.aliceID).count == count)
    }
}

extension SendWindowTests {
    /// An attempt whose receipt never comes is failed by the timer while the node is locked
    /// too: otherwise it holds the link's window until the unlock, and the timer, set by its
    /// past deadline, fires again at once, over and over.
    @Test func aLockedNodeFailsOverdueAttemptsAndReleasesTheWindow() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        pipe.drop { $0.count > 9_000 }  // the message is lost: no receipt
        let id = try pair.alice.send(to: pair.bobID, text: Self.big).messageID
        #expect(eventually { pair.alice.state.withLock { $0.delivery.inflight[id] != nil } })
        try pair.alice.lock()
        clock.advance(seconds: 31)
        pair.alice.runDeliveryTimers()
        let (flying, due) = pair.alice.state.withLock { ($0.delivery.inflight.count, $0.delivery.timerDue) }
        #expect(flying == 0)
        #expect((due ?? 0) > clock.now)
        let row = try #require(try pair.alice.withStore { store, _ in try store.outboxRow(id) })
        #expect(row.attempts == 1)
    }
}

extension SendWindowTests {
    /// With two links to one contact, the second takes over when the first's window is full
    /// (here the first has stalled: it confirms nothing), instead of standing idle.
    @Test func aSecondLinkCarriesWhatTheFirstsWindowCannot() throws {
        let pair = try Pair()
        defer { pair.close() }
        let stalled = try MemoryPipe(pair.alice, pair.bob)
        defer { stalled.close() }
        #expect(eventually { pair.alice.linkIsOpen(to: pair.bobID) })
        stalled.drop { $0.count > 9_000 }
        let spare = try MemoryPipe(pair.alice, pair.bob)
        defer { spare.close() }
        #expect(eventually { pair.alice.state.withLock { $0.delivery.links.values.filter(\.isOpen).count == 2 } })
        // A window's worth (and the packet that crosses it) sticks on the stalled link, until
        // its attempts time out; the rest arrive over the other.
        let stuck = Node.linkWindowBytes / 10_000 + 1
        let count = stuck + 20
        let ids = try pair.alice.send((0..<count).map { (pair.bobID, "\($0) " + Self.big) }).map(\.messageID)
        #expect(eventually { ids.filter { (try? pair.alice.status(of: $0)) == .delivered }.count >= count - stuck })
    }
}
