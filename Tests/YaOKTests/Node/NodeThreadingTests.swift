import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct NodeThreadingTests {
    /// Several threads write, read, page and lock/unlock one node at once: every call
    /// succeeds or fails with `locked`, and nothing is lost or corrupted.
    @Test func concurrentCallsAreSerialised() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        try node.setAutoLock(.never)
        let bob = try node.addContact(card: try cardText("Bob"))
        let stored = Locked<Int>(0)
        let unexpected = Locked<[String]>([])
        let threads = (0..<4).map { t in
            Thread {
                for i in 0..<50 {
                    do {
                        switch t {
                        case 0, 1:
                            _ = try node.send(to: bob.id, text: "t\(t) m\(i)")
                            stored.withLock { $0 += 1 }
                        case 2:
                            _ = try node.history(bob.id, limit: 20)
                            _ = try node.status()
                        default:
                            try node.lock()
                            try node.unlock(pin: testPIN)
                        }
                    } catch let error as YaOKError where error.code == .locked {
                        // Thread 3 locks now and then: a call may find the node locked.
                    } catch {
                        unexpected.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        threads.forEach { $0.start() }
        #expect(eventually { threads.allSatisfy(\.isFinished) })
        #expect(unexpected.withLock { $0 } == [])
        if try node.status().locked { try node.unlock(pin: testPIN) }
        let all = try node.history(bob.id, limit: 1000).messages
        #expect(all.count == stored.withLock { $0 })
        #expect(Set(all.map(\.messageID)).count == all.count)
    }

    @Test func twoNodesInOneProcessAreIndependent() throws {
        let a = TempDir(), b = TempDir()
        defer { a.remove(); b.remove() }
        let alice = try makeNode(a, name: "Alice")
        let bob = try makeNode(b, name: "Bob")
        try alice.lock()
        #expect(try bob.status().locked == false)
        _ = try bob.addContact(card: try cardText("Carol"))
        try alice.unlock(pin: testPIN)
        #expect(try alice.contacts().isEmpty)
        #expect(try alice.identity().publicIdentity != bob.identity().publicIdentity)
    }
}
