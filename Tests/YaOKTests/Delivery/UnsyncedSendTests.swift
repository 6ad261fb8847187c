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
        let (ticket, planned, keys) = try alice.withUnlocked { store, keys, s in
            let (ticket, planned) = try s.delivery.planSend([(pair.bobID, "written, not synced")], store, keys)
            alice.sendCommits.taken(ticket)
            return (ticket, planned, keys)
        }
        let id = try #require(planned.first?.messageID)
        let sealed = Result { try SealedSend(keys: keys, planned: planned) }
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

    /// A link is open, so the group's own pump queues its message's units in the section
    /// that writes it. A flush run by anyone else before the group's sync (the caller of the
    /// group before it handing its units over on its own thread, the event thread after any
    /// section) must leave them queued: they go out once the group is durable.
    @Test func aFlushBeforeTheGroupsSyncLeavesItsUnitsQueued() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (alice, bob) = (pair.alice, pair.bob)
        let pipe = try MemoryPipe(alice, bob, sendsFromAnyThread: true)
        defer { pipe.close() }
        #expect(eventually { (try? alice.contact(pair.bobID).connection) == .online(transport: "memory") })
        #expect(eventually { (try? bob.contact(pair.aliceID).connection) == .online(transport: "memory") })
        for node in [alice, bob, alice, bob] { try DrainSyncOutsideLockTests.waitForEventThread(node) }
        let (ticket, planned, keys) = try alice.withUnlocked { store, keys, s in
            let (ticket, planned) = try s.delivery.planSend([(pair.bobID, "written, not synced")], store, keys)
            alice.sendCommits.taken(ticket)
            return (ticket, planned, keys)
        }
        let id = try #require(planned.first?.messageID)
        let sealed = Result { try SealedSend(keys: keys, planned: planned) }
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
