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

        let (paused, resume) = try Self.holdNextDrainSync(alice)
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
        // Whatever Alice's failed drain let out has reached Bob's event thread and been
        // processed there (the pipe hands units over at once), and what Bob answered has
        // come back: not even the link's handshake answer leaves (a batch that fails lets
        // nothing out).
        for node in [alice, bob, alice, bob] { try Self.waitForEventThread(node) }
        #expect(try bob.status(of: id) != .delivered)
        #expect(try bob.status(of: id) != .sent)
        #expect(!aliceEvents.all.contains { if case .messageReceived = $0 { true } else { false } })
    }

    /// Traffic queued before a drain began and not handed on yet (its flusher, an app
    /// thread, stopped when it found the drain's sync owed, and left it to the drain's end)
    /// still leaves when that sync fails: only what was queued since the drain began is
    /// taken back.
    @Test func aDrainWhoseSyncFailsStillFlushesWhatWasQueuedBeforeIt() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (alice, bob) = (pair.alice, pair.bob)
        let pipe = try pair.settledPipe()
        defer { pipe.close() }
        let marker: [UInt8] = Array("queued before the drain".utf8)
        let handedOn = Locked(false)
        pipe.drop { unit in
            guard unit == marker else { return false }
            handedOn.withLock { $0 = true }
            return true
        }
        // fdatasync refuses /dev/null (EINVAL): Alice's disk fails at her next sync of the log.
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(null) }
        let descriptor = try alice.withStore { store, _ in try store.db.logSync().descriptor }
        #expect(dup2(null, descriptor) == descriptor)
        let synced = DispatchSemaphore(value: 0)
        try alice.withStore { _, s in
            s.delivery.drainSyncing = { synced.signal() }
            s.delivery.effects.units.append((pipe.initiator, marker))
        }

        _ = try bob.send(to: pair.aliceID, text: "to Alice")
        try #require(synced.wait(timeout: .now() + 30) == .success)
        for _ in 0..<2 { try Self.waitForEventThread(alice) }
        #expect(handedOn.withLock { $0 })
    }

    /// A carrier closed (from its transport's thread) while a drain syncs takes its queued
    /// commands with it, some of them queued before the drain began: a failed sync must
    /// still take back exactly the drain's own (its release to the relay it fetched from,
    /// and the ack it posts there), not by how many commands there are now. Else the relay
    /// deletes a message whose storing was never confirmed on disk, and the sender hears it
    /// was delivered.
    @Test func aCarrierClosedWhileADrainSyncsDoesNotLetTheFailedDrainsReleaseOut() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (alice, bob) = (pair.alice, pair.bob)
        let relay = MemoryRelay()
        try relay.connect(bob)
        try relay.connect(alice)
        let other = try alice.openCarrier(transport: "relay", route: "elsewhere", relay: Array(16..<32), callbacks: CarrierCallbacks(
            post: { _ in }, release: { _ in }, mailboxesChanged: {}, closed: { _ in }))
        // fdatasync refuses /dev/null (EINVAL): Alice's disk fails at her next sync of the log.
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(null) }
        let descriptor = try alice.withStore { store, _ in try store.db.logSync().descriptor }
        #expect(dup2(null, descriptor) == descriptor)
        // Commands for the other carrier wait for the event thread's flush when the drain
        // begins (the flushes that opening the carriers posted have run by then).
        try Self.waitForEventThread(alice)
        try alice.withStore { _, s in
            s.delivery.effects.carrierCommands += [(other, .mailboxesChanged), (other, .mailboxesChanged)]
        }
        let pending = Locked(false)
        let synced = DispatchSemaphore(value: 0)
        try alice.withStore { _, s in
            s.delivery.drainSyncing = {
                pending.withLock { p in
                    p = (try? alice.withStore { _, s in s.delivery.effects.carrierCommands.contains { $0.carrier === other } }) ?? false
                }
                let closed = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    other.close(reason: "its session ended")
                    closed.signal()
                }
                closed.wait()
                synced.signal()
            }
        }

        let id = try bob.send(to: pair.aliceID, text: "via the relay").messageID
        try #require(synced.wait(timeout: .now() + 30) == .success)
        try #require(pending.withLock { $0 }, "the other carrier's commands were still queued when the drain began")
        // Whatever the event thread flushes after the failed sync has been handed on.
        for _ in 0..<3 {
            alice.flushOutgoing()
            try Self.waitForEventThread(alice)
        }
        #expect(relay.state.withLock { $0.deleted } == 0)
        #expect(relay.stored >= 1)
        #expect(try bob.status(of: id) != .delivered)
    }

    /// Holds `node`'s next drain between its section and its sync: `paused` is signalled
    /// there, and the drain waits for `resume`. The drains after it go through.
    static func holdNextDrainSync(_ node: Node) throws -> (paused: DispatchSemaphore, resume: DispatchSemaphore) {
        let paused = DispatchSemaphore(value: 0), resume = DispatchSemaphore(value: 0)
        let once = Locked(true)
        try node.withStore { _, s in
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
        return (paused, resume)
    }

    /// Returns once `node`'s event thread has run what was posted to it before.
    static func waitForEventThread(_ node: Node) throws {
        let idle = DispatchSemaphore(value: 0)
        _ = node.loop.post { idle.signal() }
        try #require(idle.wait(timeout: .now() + 30) == .success)
    }
}
