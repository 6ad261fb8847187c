import Foundation
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

    /// A new database file `name` in this directory (made if needed).
    func database(_ name: String) throws -> Database {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return try Database(path: path + "/" + name)
    }
}

/// A wall clock and a boot clock that tests can move: `advance` is time passing (both
/// move), `setWallClock` a clock change (the boot clock does not move), `reboot` a restart
/// of the device (a new boot ID, the boot clock back near zero).
final class TestClock: Sendable {
    private struct Times { var wall: Int64 = 1_800_000_000_000; var boot = BootTime(bootID: "boot-1", milliseconds: 5_000) }
    private let times = Locked(Times())
    var now: Int64 { times.withLock { $0.wall } }
    var boot: BootTime { times.withLock { $0.boot } }
    func advance(seconds: Int64) { advance(milliseconds: seconds * 1000) }
    func advance(milliseconds: Int64) {
        times.withLock {
            $0.wall += milliseconds
            $0.boot = BootTime(bootID: $0.boot.bootID, milliseconds: $0.boot.milliseconds + milliseconds)
        }
    }
    func moveWallClock(seconds: Int64) { times.withLock { $0.wall += seconds * 1000 } }
    func reboot() {
        times.withLock {
            let n = (Int($0.boot.bootID.dropFirst(5)) ?? 1) + 1
            $0.boot = BootTime(bootID: "boot-\(n)", milliseconds: 1_000)
        }
    }
    var function: @Sendable () -> Int64 { { [self] in self.now } }
    var bootFunction: @Sendable () -> BootTime { { [self] in self.boot } }
}

/// Options with the test-only cheap Argon2id (and the opt-in it needs) and an optional
/// test clock.
func fastOptions(clock: TestClock? = nil) -> Node.Options {
    var options = Node.Options()
    options.pinHashing = .insecureFastForTestsOnly
    options.allowTestOnlyKDFCosts = true
    if let clock {
        options.clock = clock.function
        options.bootClock = clock.bootFunction
    }
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
    private let events = Locked<[NodeEvent]>([])
    private let threads = Locked<[Bool]>([])

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

extension Node {
    /// No ack waits to be sent: every ack row left is one a link or relay took, which leaves
    /// the outbox with a later commit that writes (`DeliveryEngine.takenAcks`).
    var noAcksToSend: Bool {
        (try? state.withLock { s in
            try s.store!.outboxRows(kind: .ack).allSatisfy { s.delivery.takenAcks.contains($0.packetID) }
        }) ?? false
    }
}
