import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A locked node keeps receiving: packets are held durably, confirmed to the link, and
/// opened, stored, acknowledged and announced on unlock.
@Suite struct LockedReceiveTests {
    @Test func heldWhileLockedOpenedOnUnlock() throws {
        let pair = try Pair()
        defer { pair.close() }
        let events = EventRecorder()
        events.attach(to: pair.bob)
        // The link took it (receipt), but only Bob's unlock can acknowledge it.
        let (pipe, sent) = try pair.sendWhileBobIsLocked("while you sleep")
        defer { pipe.close() }
        #expect(!events.all.contains { if case .messageReceived = $0 { return true } else { return false } })
        #expect(pair.bob.state.withLock { $0.keys == nil })
        try pair.bob.unlock(pin: testPIN)
        #expect(eventually { (try? pair.alice.status(of: sent)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == ["while you sleep"])
        #expect(try pair.bob.state.withLock { try $0.store!.heldCount() } == 0)
        #expect(events.wait { $0 == .messageReceived(contactID: pair.aliceID, messageID: sent) } != nil)
    }

    @Test func aNodeNeverUnlockedSinceOpeningHasNoLinks() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try makeNode(dir).close()
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        defer { node.close() }
        #expect(throws: YaOKError(.locked)) { try node.openLink(transport: "x", role: .responder, mtu: 100, send: { _ in }) }
    }

    @Test func oneNodePerDataDirectory() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        #expect(errorMessage { _ = try Node(dataDirectory: dir.path, options: fastOptions()) }
                == "This data directory is already open in another Ya OK node")
        node.close()
        let again = try Node(dataDirectory: dir.path, options: fastOptions())
        again.close()
    }
}
