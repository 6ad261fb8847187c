import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// A drain's status changes of outgoing messages (an ack's `delivered`, a receipt's `sent`)
/// reach the app before the drain's disk sync (`Node.withEngineSyncedAfter`): they are facts
/// of the peer's, readable in the store from the commit on, so the app's next send plans and
/// seals on its own thread while the event thread syncs. What the drain sends (the release
/// that lets the peer erase its key) and its other events still wait for the sync.
@Suite struct DeliveredBeforeDrainSyncTests {
    private static func isDelivered(_ id: MessageID) -> (NodeEvent) -> Bool {
        { if case .messageStatusChanged(let m) = $0 { m.messageID == id && m.status == .delivered } else { false } }
    }

    @Test func deliveredIsToldWhileTheAckDrainSyncs() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (alice, bob) = (pair.alice, pair.bob)
        let pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        let events = EventRecorder()
        events.attach(to: alice)
        // One exchange first: the keys announced and rings settled, the next drain of
        // Alice's that syncs is the one applying the second message's ack.
        let first = try alice.send(to: pair.bobID, text: "first").messageID
        #expect(events.wait(for: Self.isDelivered(first)) != nil)
        try DrainSyncOutsideLockTests.waitForEventThread(alice)

        let (paused, resume) = try DrainSyncOutsideLockTests.holdNextDrainSync(alice)
        let id = try alice.send(to: pair.bobID, text: "second").messageID
        try #require(paused.wait(timeout: .now() + 30) == .success, "the drain that applies the ack syncs")
        // Alice's event thread waits in that drain's sync: the app has been told already,
        // and reads the same in the store.
        #expect(events.all.contains(where: Self.isDelivered(id)))
        #expect(try alice.status(of: id) == .delivered)
        resume.signal()
        #expect(events.all.filter(Self.isDelivered(id)).count == 1)
    }
}
