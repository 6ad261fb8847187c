import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKNode

/// A send from an app's thread hands its units to a link that takes them on any thread
/// (LAN's: `LinkSender.anyThread`) itself, instead of waking the event thread for it
/// (issue 20: that wake-up was most of the time from a send's sync to the wire). Not while
/// a drain's sync is owed, and never for an app's own link, which is only ever called on
/// the event thread.
@Suite struct SendOnCallingThreadTests {
    /// Records which thread hands each unit to the pipe (both directions).
    final class Wire: Sendable {
        let caller = pthread_self()
        private let units = Locked<[(onCaller: Bool, onEventThread: Bool)]>([])

        init(_ pipe: MemoryPipe, eventLoops: [EventLoop]) {
            pipe.drop { [caller, units] _ in
                let onCaller = pthread_equal(pthread_self(), caller) != 0
                units.withLock { $0.append((onCaller, eventLoops.contains { $0.isLoopThread })) }
                return false
            }
        }

        var count: Int { units.withLock { $0.count } }
        var onCaller: Int { units.withLock { $0.count { $0.onCaller } } }
        var all: [(onCaller: Bool, onEventThread: Bool)] { units.withLock { $0 } }
    }

    @Test func aSendsUnitsLeaveOnItsOwnThreadOverALinkThatTakesThemOnAnyThread() throws {
        let pair = try Pair()
        defer { pair.close() }
        let pipe = try pair.settledPipe(sendsFromAnyThread: true)
        defer { pipe.close() }
        let wire = Wire(pipe, eventLoops: [pair.alice.loop, pair.bob.loop])

        let id = try pair.alice.send(to: pair.bobID, text: "straight to the wire").messageID
        #expect(wire.onCaller >= 1)  // 0 when every flush went through the event thread
        #expect(eventually { (try? pair.alice.status(of: id)) == .delivered })
    }

    /// While the event thread's drain syncs (its section ended, the sync not returned), a
    /// send on an app's thread leaves nothing on the wire: an ack of what the drain stored
    /// may be queued, and a failed sync takes back what was queued since the drain began.
    /// Nor does it post a flush to the event thread: the drain's end flushes what is queued
    /// then, the send's unit with it.
    @Test func whileADrainsSyncIsOwedASendLeavesNothingUntilItReturns() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (alice, bob) = (pair.alice, pair.bob)
        let pipe = try pair.settledPipe(sendsFromAnyThread: true)
        defer { pipe.close() }

        let (paused, resume) = try DrainSyncOutsideLockTests.holdNextDrainSync(alice)
        let id = try bob.send(to: pair.aliceID, text: "to Alice").messageID
        try #require(paused.wait(timeout: .now() + 30) == .success, "the drain that stores it syncs after its section")
        // Alice's units leave on this thread or her event thread (which waits in the sync).
        let wire = Wire(pipe, eventLoops: [alice.loop])
        let posts = alice.eventThreadPosts
        _ = try alice.send(to: pair.bobID, text: "meanwhile")
        #expect(wire.all.filter { $0.onCaller || $0.onEventThread }.isEmpty)  // the send's units, without the owed check
        #expect(alice.eventThreadPosts == posts)  // 1 before: the flush, posted to wait out the drain

        resume.signal()
        #expect(eventually { (try? bob.texts(pair.aliceID))?.contains("meanwhile") == true })
        #expect(eventually { (try? bob.status(of: id)) == .delivered })
    }

    /// An app thread that flushes hands on its own units, and what was queued meanwhile
    /// (other threads' sends) for `appThreadFlushRounds` rounds, then posts the rest to
    /// the event thread: a steady stream of other sends must not keep its `send` from
    /// returning. Here each unit it hands on finds another queued.
    @Test func anAppThreadsFlushHandsOnItsRoundsAndPostsTheRest() throws {
        let pair = try Pair()
        defer { pair.close() }
        let alice = pair.alice
        let pipe = try pair.settledPipe(sendsFromAnyThread: true)
        defer { pipe.close() }
        let caller = pthread_self()
        let marker: [UInt8] = Array("queued by another thread".utf8)
        let markers = Locked((queued: 0, handedOn: 0, onCaller: 0))
        pipe.drop { [initiator = pipe.initiator] unit in
            let onCaller = pthread_equal(pthread_self(), caller) != 0
            if unit == marker {
                markers.withLock { m in
                    m.handedOn += 1
                    if onCaller { m.onCaller += 1 }
                }
            }
            if onCaller, markers.withLock({ $0.queued }) < 50 {
                try? alice.withStore { _, s in s.delivery.effects.units.append((initiator, marker)) }
                markers.withLock { $0.queued += 1 }
            }
            return unit == marker
        }
        let id = try alice.send(to: pair.bobID, text: "with a stream behind it").messageID
        #expect(markers.withLock { $0.onCaller } <= Node.appThreadFlushRounds)  // 50 before the cap
        #expect(eventually { markers.withLock { $0.handedOn == $0.queued } })
        #expect(eventually { (try? alice.status(of: id)) == .delivered })
    }

    /// An app's link (`Node.openLink`, the C ABI's `yaok_link_open`) is called on the event
    /// thread only, as include/yaok.h promises, however a send arrives.
    @Test func anAppsLinkIsOnlyCalledOnTheEventThread() throws {
        let pair = try Pair()
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { (try? pair.alice.contact(pair.bobID).connection) == .online(transport: "memory") })
        let wire = Wire(pipe, eventLoops: [pair.alice.loop, pair.bob.loop])
        let ids = try (0..<3).map { try pair.alice.send(to: pair.bobID, text: "message \($0)").messageID }
        #expect(eventually { ids.allSatisfy { (try? pair.alice.status(of: $0)) == .delivered } })
        #expect(wire.count >= 6)  // the messages and their receipts and acks
        #expect(wire.all.allSatisfy { $0.onEventThread && !$0.onCaller })
    }
}
