import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// The event thread's inbound drain commits under the node's lock and syncs the disk after
/// releasing it (`Node.withEngineSyncedAfter`): an app thread's send is not held up by the
/// sync, and nothing the drain decided (the receipt and ack to the sender, the app's
/// received event) is out before the sync returns.
@Suite struct DrainSyncOutsideLockTests {
    @Test func aSendGoesThroughWhileADrainSyncsAndNothingOfTheDrainLeavesBeforeIt() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (alice, bob) = (pair.alice, pair.bob)
        let pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        #expect(eventually { (try? alice.contact(pair.bobID).connection) == .online(transport: "memory") })
        #expect(eventually { (try? bob.contact(pair.aliceID).connection) == .online(transport: "memory") })
        let aliceEvents = EventRecorder()
        aliceEvents.attach(to: alice)

        let paused = DispatchSemaphore(value: 0), resume = DispatchSemaphore(value: 0)
        let once = Locked(true)
        try alice.withStore { _, s in
            s.delivery.drainSyncing = {
                let first = once.withLock { first in
                    defer { first = false }
                    return first
                }
                guard first else { return }
                paused.signal()
                resume.wait()
            }
        }
        let id = try bob.send(to: pair.aliceID, text: "to Alice").messageID
        try #require(paused.wait(timeout: .now() + 30) == .success, "the drain that stores it syncs after its section")

        // Alice's event thread waits in the drain's sync: her app thread still sends (the
        // node's lock is free), and nothing of the drain has left.
        _ = try alice.send(to: pair.bobID, text: "meanwhile")
        let received = aliceEvents.all.contains { if case .messageReceived = $0 { true } else { false } }
        #expect(!received)
        #expect(try bob.status(of: id) != .delivered)
        #expect(try bob.status(of: id) != .sent)

        resume.signal()
        #expect(eventually { (try? bob.status(of: id)) == .delivered })
        #expect(aliceEvents.wait { if case .messageReceived = $0 { true } else { false } } != nil)
        #expect(eventually { (try? bob.texts(pair.aliceID))?.contains("meanwhile") == true })
    }

    /// The sync after the lock fails (a disk that cannot confirm the write): the drain let
    /// nothing out, as a batch that failed inside: no receipt or ack to the sender, no
    /// received event; the sender keeps the message to send again.
    @Test func aDrainWhoseSyncFailsLetsNothingOut() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (alice, bob) = (pair.alice, pair.bob)
        let aliceEvents = EventRecorder()
        aliceEvents.attach(to: alice)
        // fdatasync refuses /dev/null (EINVAL): Alice's disk fails at her next sync of the log.
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(null) }
        let descriptor = try alice.withStore { store, _ in try store.db.logSync().descriptor }
        #expect(dup2(null, descriptor) == descriptor)
        let synced = DispatchSemaphore(value: 0)
        try alice.withStore { _, s in s.delivery.drainSyncing = { synced.signal() } }

        let id = try bob.send(to: pair.aliceID, text: "to Alice").messageID
        let pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        try #require(synced.wait(timeout: .now() + 30) == .success)
        // Time for anything that would leave to arrive (not even the link's handshake
        // answer leaves: a batch that fails lets nothing out).
        usleep(300_000)
        #expect(try bob.status(of: id) != .delivered)
        #expect(try bob.status(of: id) != .sent)
        #expect(!aliceEvents.all.contains { if case .messageReceived = $0 { true } else { false } })
    }
}
