import Foundation
import Synchronization
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A fresh directory under the system temp dir, removed by `remove()`.
struct TempDir {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "yaok-test-" + UUID().uuidString
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A wall clock tests can move.
final class TestClock: Sendable {
    private let ms = Mutex<Int64>(1_800_000_000_000)
    var now: Int64 { ms.withLock { $0 } }
    func advance(seconds: Int64) { ms.withLock { $0 += seconds * 1000 } }
    var function: @Sendable () -> Int64 { { [self] in self.now } }
}

/// Options with the test-only cheap Argon2id and an optional test clock.
func fastOptions(clock: TestClock? = nil) -> Node.Options {
    var options = Node.Options()
    options.pinHashing = .insecureFastForTestsOnly
    if let clock { options.clock = clock.function }
    return options
}

let testPIN = "246810"

/// A node set up with `testPIN`, unlocked.
func makeNode(_ dir: TempDir, name: String = "Alice", clock: TestClock? = nil) throws -> Node {
    let node = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
    _ = try node.setup(name: name, pin: testPIN, confirmation: testPIN)
    return node
}

func cardText(_ name: String) throws -> String { try Identity(name: name).card.text }

/// Collects a node's events (delivered on its event thread) for tests to wait on.
final class EventRecorder: Sendable {
    private let events = Mutex<[NodeEvent]>([])
    private let threads = Mutex<[Bool]>([])

    func attach(to node: Node) {
        node.setEventHandler { [self, loop = node.loop] event in
            threads.withLock { $0.append(loop.isLoopThread) }
            events.withLock { $0.append(event) }
        }
    }

    var all: [NodeEvent] { events.withLock { $0 } }
    func record(_ event: NodeEvent) { events.withLock { $0.append(event) } }
    /// Whether every event so far arrived on the node's event thread.
    var allOnEventThread: Bool { threads.withLock { $0.allSatisfy { $0 } } }

    /// Waits (polling, up to a generous limit that only guards against a hang) until an
    /// event matches. No assertion about how long it took.
    func wait(for predicate: (NodeEvent) -> Bool) -> NodeEvent? {
        for _ in 0..<6000 {
            if let e = all.first(where: predicate) { return e }
            usleep(5000)
        }
        return nil
    }
}

/// Polls `condition` (same rules as `EventRecorder.wait`).
func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<6000 {
        if condition() { return true }
        usleep(5000)
    }
    return false
}

/// The message of the YaOKError `body` throws (errors compare by code only), or nil.
func errorMessage(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch let error as YaOKError {
        return error.message
    } catch {
        return "\(error)"
    }
}
