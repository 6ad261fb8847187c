import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// A group commit of sends writes its rows under the node's lock without a sync and syncs
/// after (`Node.writeSendGroup`). Until that sync the rows are not durable and the app has
/// not been told of them (MESSAGE_STORED goes out after the sync): no other section's pump
/// may hand them to a link meanwhile, or a crash loses the sender's copy of a message the
/// recipient gets, and the receipt's MESSAGE_STATUS_CHANGED reaches the app before the
/// MESSAGE_STORED of the same message (docs/ABI.md: events in the order they happened).
@Suite struct UnsyncedSendTests {
    @Test func noPumpSendsAGroupsRowsBeforeItsSyncAndStoredComesFirst() throws {
        let pair = try Pair()
        defer { pair.close() }
        let alice = pair.alice
        let events = EventRecorder()
        events.attach(to: alice)
        let (ticket, id, sealed) = try alice.plannedSend(to: pair.bobID, "written, not synced")
        var pipe: MemoryPipe?
        defer { pipe?.close() }
        var inFlightBeforeSync: Bool?
        let result = alice.sendCommits.commit(ticket: ticket, sealed) { group in
            // Written (no link was open, so the group's own pump sent nothing), not synced:
            // a link opens, and the event thread's pump and the delivery timer's run.
            let written = try alice.writeSendGroup(group)
            pipe = try MemoryPipe(alice, pair.bob)
            #expect(eventually { (try? alice.contact(pair.bobID).connection) == .online(transport: "memory") })
            alice.runDeliveryTimers()
            inFlightBeforeSync = try alice.withStore { store, s in
                let row = try store.outboxRow(id)
                return s.delivery.inflight[id] != nil || row?.state != .queued
            }
            return written
        }
        #expect(inFlightBeforeSync == false)
        #expect(try result.get().map(\.messageID) == [id])
        // Synced: it goes out now, without waiting for another event.
        func statuses() -> [String] {
            events.all.compactMap { event -> String? in
                switch event {
                case .messageStored(let m) where m.messageID == id: "stored"
                case .messageStatusChanged(let m) where m.messageID == id: "\(m.status)"
                default: nil
                }
            }
        }
        #expect(eventually { statuses().last == "delivered" })
        #expect(statuses().first == "stored")
    }

    /// A pump reads the held sends, then passes them over. A group released between the
    /// two (its sync done on the sender's thread, without the node's lock) found that no
    /// pump had passed it over yet and did not pump; the pump then passed it over all the
    /// same, and nothing sent it: a send made while a relay session opened waited for the
    /// hourly sweep. Here the session opens on another thread and its pump waits, after
    /// reading the held set, until the group is released: the message is posted at once.
    @Test func aSendReleasedWhileARelaySessionOpensIsPostedAtOnce() throws {
        let pair = try Pair()
        defer { pair.close() }
        let alice = pair.alice
        let heldRead = DispatchSemaphore(value: 0), released = DispatchSemaphore(value: 0)
        let once = Locked(false)
        try alice.withStore { _, s in
            s.delivery.heldRead = {
                guard once.withLock({ first in defer { first = true }; return !first }) else { return }
                heldRead.signal()
                _ = released.wait(timeout: .now() + 10)
            }
        }
        let (ticket, id, sealed) = try alice.plannedSend(to: pair.bobID, "sent as the session opened")
        let relay = MemoryRelay()
        let result = alice.sendCommits.commit(ticket: ticket, sealed) { group in
            // Written, not synced, with no session open: then one opens, on another thread.
            let written = try alice.writeSendGroup(group)
            Thread.detachNewThread { _ = try? relay.connect(alice) }
            #expect(heldRead.wait(timeout: .now() + 10) == .success)
            return written  // synced and released now, while the session's pump waits
        }
        released.signal()
        #expect(try result.get().map(\.messageID) == [id])
        // Posted long before an attempt's 30 s timeout, with no other event to pump. (Its
        // status is not awaited: this relay in memory drops the ACCEPTED of a post that
        // comes before `connect` has returned the carrier, which the thread here allows.)
        let deadline = Date().addingTimeInterval(10)
        while relay.stored == 0, Date() < deadline { usleep(5000) }
        #expect(relay.stored == 1)
    }

    /// A link is open, so the group's own pump queues its message's units in the section
    /// that writes it. A flush run by anyone else before the group's sync (the caller of the
    /// group before it handing its units over on its own thread, the event thread after any
    /// section) must leave them queued: they go out once the group is durable.
    @Test func aFlushBeforeTheGroupsSyncLeavesItsUnitsQueued() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (alice, bob) = (pair.alice, pair.bob)
        let pipe = try pair.settledPipe(sendsFromAnyThread: true)
        defer { pipe.close() }
        let (ticket, id, sealed) = try alice.plannedSend(to: pair.bobID, "written, not synced")
        var receivedBeforeSync: Bool?
        let result = alice.sendCommits.commit(ticket: ticket, sealed) { group in
            let written = try alice.writeSendGroup(group)
            let queued = try alice.withStore { _, s in s.delivery.effects.units.count }
            #expect(queued > 0)  // the group's own pump sent it
            // Another app thread's flush, then the event thread's.
            let flushed = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                alice.flushOutgoing()
                flushed.signal()
            }
            flushed.wait()
            _ = alice.loop.post { alice.flushOutgoing() }
            try DrainSyncOutsideLockTests.waitForEventThread(alice)
            // Whatever left has been stored by Bob's drain (the pipe hands units over at once).
            for node in [bob, bob] { try DrainSyncOutsideLockTests.waitForEventThread(node) }
            receivedBeforeSync = try bob.texts(pair.aliceID).contains("written, not synced")
            return written
        }
        #expect(receivedBeforeSync == false)
        #expect(try result.get().map(\.messageID) == [id])
        #expect(eventually { (try? alice.status(of: id)) == .delivered })
    }
}
