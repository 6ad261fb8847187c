import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKNode

/// Review finding (issue 11): every event ran one stack level deeper than the last, until
/// the process crashed after some 25,000 events (the handler, stored as a bare closure in a
/// generic lock, gained a re-abstraction thunk at each access). Now the depth stays put.
@Suite struct EventDepthTests {
    @Test func manyEventsRunAtTheSameStackDepth() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir, name: "Alice")
        defer { node.close() }
        let count = 50_000
        struct Seen { var first: UInt = 0, deepest: UInt = 0, shallowest: UInt = .max, events = 0 }
        let seen = Locked(Seen())
        node.setEventHandler { _ in
            var marker = 0
            let address = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
            seen.withLock { s in
                if s.events == 0 { s.first = address }
                s.deepest = max(s.deepest, address)
                s.shallowest = min(s.shallowest, address)
                s.events += 1
            }
        }
        for i in 0..<count {
            node.emitNotice(TransportNotice(transport: "test", message: "notice \(i)"))
        }
        #expect(eventually { seen.withLock { $0.events } == count })
        let s = seen.withLock { $0 }
        // 256 bytes a level would be 12 MB here; allow a few KB of ordinary variation.
        #expect(s.deepest - s.shallowest < 16 * 1024)
    }
}
