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
}
