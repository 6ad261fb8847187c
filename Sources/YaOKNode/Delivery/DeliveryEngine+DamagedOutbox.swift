import YaOKSupport
import YaOKWire
import YaOKStore

/// An outbox row that fails its check is `corruptStore` whenever it is read: its MAC fails
/// with the keys (Store+Integrity.swift: changed in the file outside Ya OK), or, with or
/// without them, its kind or state is unknown or SQLite finds its page damaged. Read by the
/// pump, that error used to end the pump and the sweep: the contact's messages queued after
/// it, every contact after that one, the expiry and the keepalives all waited for ever
/// behind one row. Now every read of one row by the engine (`checkedOutboxRow`: the pump,
/// the sweep, a failed attempt's bookkeeping, a receipt for a packet no longer in flight, a
/// carrier's rate-limit answer, a missed acknowledgement window, a retry) and the unlock's
/// status check (`reconcileStatuses`) take such a row out instead: removed unsent (its
/// packet cannot be trusted, and a row changed once would only fail again), its message
/// `failed` so that the app sees it and a retry seals the text afresh (`Node.retry`: no
/// outbox row left, so it seals anew), and an `outbox_tampered` security event naming it. Everything else goes on as before. Listing
/// the outbox (`Node.outbox`) still reports `corruptStore` until it has been removed.
///
/// The row's ID is the file's word, not ours: it may name a message that was delivered long
/// ago (its row gone), so only a message still waiting for delivery is marked `failed`,
/// never a delivered one (that would let an edit of the file turn a delivered message into
/// a failed one under our own MAC). While locked the row is only passed over: without the
/// keys its message cannot be marked, and removed then it would stay "sending" for ever
/// with nothing left to send; the unlock, or the first send or sweep after it, takes it out.
extension DeliveryEngine {
    /// The outbox row `id`, checked; nil when there is none, or when it failed its check
    /// (taken out as above, or passed over while locked). Other errors (storage) propagate.
    mutating func checkedOutboxRow(_ id: MessageID, _ store: Store, _ keys: UnlockedKeys?) throws -> OutboxRow? {
        do {
            return try store.outboxRow(id)
        } catch let error as YaOKError where error.code == .corruptStore {
            guard let keys else { return nil }
            try removeDamagedOutbox(id, store, keys)
            return nil
        }
    }

    /// Our message `id`; nil when there is none, or when its row fails its check (changed
    /// outside Ya OK, or damaged on disk). Such a row is left as it is, never authenticated
    /// again by a write: what reads it on the way (an ack, the unlock's status check) goes
    /// on with the next ID instead of failing the batch it is in. Other errors (storage)
    /// propagate.
    func checkedOutgoingMessage(_ id: MessageID, _ store: Store, _ keys: UnlockedKeys) throws -> Message? {
        do {
            return try store.outgoingMessage(messageID: id.bytes, cipher: keys.cipher)
        } catch let error as YaOKError where error.code == .corruptStore {
            return nil
        }
    }

    /// In one batch: a write failing after the removal (a full disk) lost the security
    /// event, and the row, gone, was never reported again.
    private mutating func removeDamagedOutbox(_ id: MessageID, _ store: Store, _ keys: UnlockedKeys) throws {
        try batch(store) { engine in try engine.takeOutDamagedOutbox(id, store, keys) }
    }

    private mutating func takeOutDamagedOutbox(_ id: MessageID, _ store: Store, _ keys: UnlockedKeys) throws {
        try store.removeOutbox(id)
        inflight.remove(id)
        var detail = "An outbox entry (packet \(id)) failed its integrity check (changed outside Ya OK, or damaged on disk): removed unsent"
        do {
            // An ack's row names no message of ours: nothing to mark.
            if let message = try store.outgoingMessage(messageID: id.bytes, cipher: keys.cipher), message.status != .delivered {
                if message.status != .failed {
                    try store.setStatus(of: message, .failed, now: now)
                    effects.events.append(.messageStatusChanged(message.with(status: .failed, now: now)))
                }
                detail += "; its message is failed and can be retried"
            }
        } catch let error as YaOKError where error.code == .corruptStore {
            detail += "; its message failed its check too"
        }
        effects.events.append(.security(try store.appendSecurityEvent(.outboxTampered, detail, time: now)))
    }
}
