import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop

/// The eventfd is written only when the loop thread sleeps (issue 20: each write is a
/// system call on the poster's side and a wake-up on the loop's, on every hop of a message).
extension EventLoopTests {
    /// Work posted or scheduled while the loop thread runs, and work it posts itself, is
    /// seen before the thread sleeps again: none of it writes the eventfd.
    @Test func postsWhileTheLoopRunsAndFromItWriteNoEventfd() throws {
        let loop = try EventLoop()
        defer { loop.stop() }
        let started = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let ran = Locked(0)
        loop.post {
            started.signal()
            gate.wait()
            for _ in 0..<10 { loop.post { ran.withLock { $0 += 1 } } }
        }
        started.wait()
        let before = loop.wakeUps
        for _ in 0..<10 { loop.post { ran.withLock { $0 += 1 } } }
        loop.schedule(after: 0) { ran.withLock { $0 += 1 } }
        gate.signal()
        #expect(eventually { ran.withLock { $0 } == 21 })
        #expect(eventually { loop.isSleeping })
        #expect(loop.wakeUps == before)  // 11 before the change
    }

    /// A timer due after the one the sleeping thread waits for writes nothing; one due
    /// before it wakes the thread (at most one write): it fires long before the 600 s the
    /// thread slept towards. Not exactly one: a thread that left its sleep by itself
    /// meanwhile (an interrupted epoll_wait: ThreadSanitizer's signals) sees the new timer
    /// when it next picks its timeout, and nothing need be written (CI saw 0 once).
    @Test func onlyAnEarlierTimerWakesTheSleepingLoop() throws {
        let loop = try EventLoop()
        defer { loop.stop() }
        loop.schedule(after: 600) {}
        #expect(eventually { loop.isSleeping })
        let before = loop.wakeUps
        loop.schedule(after: 1200) {}
        #expect(loop.wakeUps == before)  // 1 before the change
        let fired = DispatchSemaphore(value: 0)
        loop.schedule(after: 0.001) { fired.signal() }
        #expect(fired.wait(timeout: .now() + 30) == .success)
        #expect(loop.wakeUps <= before + 1)
    }

    /// No lost wake-up: threads post bursts and schedule timers to a thread that sleeps
    /// towards a far deadline (or is just waking, or about to sleep), each waiting for its
    /// own work before the next round; every item runs, and a burst costs fewer eventfd
    /// writes than items (it wakes the thread once).
    @Test func everyItemRunsWhenManyThreadsPostAndScheduleToASleepingLoop() throws {
        let loop = try EventLoop()
        defer { loop.stop() }
        loop.schedule(after: 3600) {}
        let threads = 8, rounds = 200, burst = 4
        let lost = Locked(0)
        let finished = DispatchSemaphore(value: 0)
        let (posts0, wakeUps0) = (loop.postsAccepted, loop.wakeUps)
        for t in 0..<threads {
            Thread {
                let ran = DispatchSemaphore(value: 0)
                for round in 0..<rounds {
                    for _ in 0..<burst { loop.post { ran.signal() } }
                    loop.schedule(after: (round + t) % 3 == 0 ? 0 : 0.0002) { ran.signal() }
                    for _ in 0...burst where ran.wait(timeout: .now() + 20) == .timedOut {
                        lost.withLock { $0 += 1 }
                    }
                    if lost.withLock({ $0 }) > 0 { break }
                }
                finished.signal()
            }.start()
        }
        for _ in 0..<threads { finished.wait() }
        #expect(lost.withLock { $0 } == 0)
        let items = loop.postsAccepted - posts0 + threads * rounds
        #expect(items == threads * rounds * (burst + 1))
        #expect(loop.wakeUps - wakeUps0 < items)  // one write per item before the change
    }
}
