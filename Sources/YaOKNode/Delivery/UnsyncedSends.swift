import YaOKSupport
import YaOKWire

/// The messages of send groups written and not yet synced (`Node.writeSendGroup`: the
/// group commits under the node's lock without a sync, and syncs after with the lock
/// released). No pump hands them to a link or a relay meanwhile: their rows are not durable
/// yet (a crash would lose the sender's copy of a message the recipient gets), and the app
/// has not been told of them (their MESSAGE_STORED goes out after the sync, and a receipt's
/// MESSAGE_STATUS_CHANGED must not come first). The group's own pump, in the same section,
/// still hands them on: what it queued is held in the queue (`DeliveryEngine.heldTraffic`),
/// whoever flushes meanwhile (another group's caller, the event thread), until the sync.
///
/// A reference shared by the engine and the group's finish, which releases them without
/// the node's lock; then, if a pump passed any over, it pumps again. So a pump reads the
/// set once (`held`), but decides to pass a message over only under this lock
/// (`passOver`): a release can come between the two, and a pump that flagged the message
/// after the release had read the flag left it for the next pump, which nothing brought
/// (a send made while a relay session opened waited an hour for the delivery sweep).
final class UnsyncedSends: Sendable {
    private let state = Locked<(held: Set<MessageID>, passedOver: Bool)>(([], false))

    /// Held from now until `release`.
    func hold(_ ids: [MessageID]) {
        guard !ids.isEmpty else { return }
        state.withLock { $0.held.formUnion(ids) }
    }

    /// The messages held now (the pump reads them once per run).
    var held: Set<MessageID> { state.withLock { $0.held } }

    /// A pump found `id` among the `held` it read: true if it is still held, and then the
    /// release pumps again; false if it was released since (durable now: hand it on).
    func passOver(_ id: MessageID) -> Bool {
        state.withLock { state in
            guard state.held.contains(id) else { return false }
            state.passedOver = true
            return true
        }
    }

    /// Synced (or the sync failed: the rows are there all the same): no longer held.
    /// Returns whether a pump passed over a held message since the last release.
    func release(_ ids: [MessageID]) -> Bool {
        state.withLock { state in
            state.held.subtract(ids)
            defer { state.passedOver = false }
            return state.passedOver
        }
    }
}

extension DeliveryEngine {
    /// Holds what was queued from `start` on (a send group's section: `heldTraffic`) until
    /// `releaseTraffic`; nil when nothing was.
    mutating func holdTraffic(from start: DeliveryEffects.Position) -> UInt64? {
        guard effects.end != start else { return nil }
        defer { nextTrafficHold += 1 }
        heldTraffic[nextTrafficHold] = start
        return nextTrafficHold
    }

    mutating func releaseTraffic(_ hold: UInt64) {
        heldTraffic[hold] = nil
    }

    /// Where what a flush may take ends (nil: nowhere, all of it).
    var flushLimit: DeliveryEffects.Position? {
        heldTraffic.values.reduce(nil) { first, start in first.map { DeliveryEffects.first($0, start) } ?? start }
    }
}
