import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKNode

/// An event goes to the handler registered when it was emitted (issue 8 §9): one emitted
/// before a registration, and still queued on the event thread, must not reach the new
/// handler; one emitted before a replacement still reaches the old one.
@Suite struct EventOrderingTests {
    /// Holds the event thread until `release()`, so emitted events stay queued.
    final class Gate: Sendable {
        private let open = Locked(false)
        let entered = Locked(false)
        func hold(_ loop: EventLoop) {
            loop.post { [self] in
                entered.withLock { $0 = true }
                while !open.withLock({ $0 }) { usleep(1000) }
            }
            while !entered.withLock({ $0 }) { usleep(1000) }
        }
        func release() { open.withLock { $0 = true } }
    }

    @Test func anEventEmittedBeforeRegistrationDoesNotReachTheNewHandler() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        defer { node.close() }
        let gate = Gate()
        gate.hold(node.loop)
        try node.lock()  // emits .locked while the event thread is held
        let late = EventRecorder()
        late.attach(to: node)
        gate.release()
        try node.unlock(pin: testPIN)  // emitted after the registration: delivered
        #expect(late.wait { if case .unlocked = $0 { return true } else { return false } } != nil)
        #expect(!late.all.contains { if case .locked = $0 { return true } else { return false } })
    }

    @Test func anEventEmittedBeforeAReplacementReachesTheOldHandler() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        defer { node.close() }
        let old = EventRecorder(), new = EventRecorder()
        old.attach(to: node)
        let gate = Gate()
        gate.hold(node.loop)
        try node.lock()
        new.attach(to: node)
        gate.release()
        try node.unlock(pin: testPIN)
        #expect(new.wait { if case .unlocked = $0 { return true } else { return false } } != nil)
        #expect(old.wait { if case .locked = $0 { return true } else { return false } } != nil)
        #expect(!new.all.contains { if case .locked = $0 { return true } else { return false } })
        #expect(!old.all.contains { if case .unlocked = $0 { return true } else { return false } })
    }
}
