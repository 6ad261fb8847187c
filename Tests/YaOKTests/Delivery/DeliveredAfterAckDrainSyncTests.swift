import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// The sender's drain that applies an ack syncs before `delivered` reaches the app
/// (`Node.withEngineSyncedAfter`: a drain's events wait for its sync; 72d810a told status
/// changes before it and was reverted in aeb6d4c). So a message one at a time waits for
/// three synced commits in series before `delivered`: the send's, the receiver's drain
/// before its ack leaves, and this one. yaok-bench's floors and the README count them.
@Suite struct DeliveredAfterAckDrainSyncTests {
    private static func isDelivered(_ id: MessageID) -> (NodeEvent) -> Bool {
        { if case .messageStatusChanged(let m) = $0 { m.messageID == id && m.status == .delivered } else { false } }
    }

    @Test func deliveredWaitsForTheAckDrainsSync() throws {
        let pair = try Pair()
        defer { pair.close() }
        let alice = pair.alice
        // One exchange first: the keys announced and rings settled, the next drain of
        // Alice's that syncs is the one applying the second message's ack.
        let (pipe, events) = try pair.linkedAfterOneExchange()
        defer { pipe.close() }
        try DrainSyncOutsideLockTests.waitForEventThread(alice)

        let (paused, resume) = try DrainSyncOutsideLockTests.holdNextDrainSync(alice)
        let id = try alice.send(to: pair.bobID, text: "second").messageID
        try #require(paused.wait(timeout: .now() + 30) == .success, "the drain that applies the ack syncs")
        // Alice's event thread waits in that drain's sync: the app has not been told yet.
        #expect(!events.all.contains(where: Self.isDelivered(id)))
        resume.signal()
        #expect(events.wait(for: Self.isDelivered(id)) != nil)
    }
}
