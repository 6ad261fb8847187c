import YaOKSupport
import YaOKWire
import YaOKStore

/// An outbox row that fails its integrity check (Store+Integrity.swift: changed in the file
/// outside Ya OK, or damaged on disk) is `corruptStore` whenever it is read with the keys.
/// Read by the pump, that error used to end the pump and the sweep: the contact's messages
/// queued after it, every contact after that one, the expiry and the keepalives all waited
/// for ever behind one row. Now the pump, the sweep and a failed attempt's bookkeeping take
/// such a row out instead: removed unsent (its packet cannot be trusted, and a row changed
/// once would only fail again), its message `failed` so that the app sees it and a retry
/// seals the text afresh (`Node.retry`: no outbox row left, so it seals anew), and an
/// `outbox_tampered` security event naming it. Everything else goes on as before. Listing
/// the outbox (`Node.outbox`) still reports `corruptStore` until the pump has removed it.
extension DeliveryEngine {
    /// The outbox row `id`, checked; nil when there is none, or when it failed its check and
    /// was taken out as above. Other errors (storage) propagate.
    mutating func checkedOutboxRow(_ id: MessageID, _ store: Store, _ keys: UnlockedKeys?) throws -> OutboxRow? {
        do {
            return try store.outboxRow(id)
        } catch let error as YaOKError where error.code == .corruptStore {
            try removeDamagedOutbox(id, store, keys)
            return nil
        }
    }

    private mutating func removeDamagedOutbox(_ id: MessageID, _ store: Store, _ keys: UnlockedKeys?) throws {
        try store.removeOutbox(id)
        inflight.remove(id)
        var detail = "An outbox entry (packet \(id)) was changed outside Ya OK: removed unsent"
        if let keys {
            do {
                // An ack's row names no message of ours: nothing to mark.
                if try setStatus(id, .failed, store, keys) != nil { detail += "; its message is failed and can be retried" }
            } catch let error as YaOKError where error.code == .corruptStore {
                detail += "; its message failed its check too"
            }
        }
        effects.events.append(.security(try store.appendSecurityEvent(.outboxTampered, detail, time: now)))
    }
}
