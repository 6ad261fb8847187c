import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A working link survives noise and injection (PROTOCOL.md §5.2, §5.3): on a Bluetooth
/// channel without link-layer encryption anyone in range can inject units.
@Suite struct LinkNoiseTests {
    @Test func junkAndAReplayedHandshakeDoNotCloseAWorkingLink() throws {
        let pair = try Pair()
        defer { pair.close() }
        let first = Locked<[UInt8]?>(nil)
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        let m = try pair.alice.send(to: pair.bobID, text: "before")
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
        // m1 as a peer would send it: the first unit of a fresh link's handshake.
        let probe = try MemoryPipe(pair.alice, pair.bob)
        probe.drop { unit in
            first.withLock { if $0 == nil { $0 = unit } }
            return true
        }
        #expect(eventually { first.withLock { $0 } != nil })
        probe.close()
        let m1 = try #require(first.withLock { $0 })
        for unit in [[1, 2, 3], m1, m1, [UInt8](repeating: 0xFF, count: 40)] as [[UInt8]] {
            pipe.responder.receive(unit)
            pipe.initiator.receive(unit)
        }
        let after = try pair.alice.send(to: pair.bobID, text: "after")
        #expect(eventually { (try? pair.alice.status(of: after.messageID)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == ["before", "after"])
        #expect(pipe.initiator.isAuthenticated && pipe.responder.isAuthenticated)  // still open
    }
}
