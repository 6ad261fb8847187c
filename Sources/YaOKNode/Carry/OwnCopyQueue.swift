import YaOKWire
import YaOKLoop

/// The own carried copies still to be made (docs/PROTOCOL.md §12.6, "Sending"): `Node.send`
/// only marks its outbox row (Store+CarryOwn.swift) and queues the message here; the engine
/// makes the copies later, many in one transaction (DeliveryEngine+CarryOwnCopies), off the
/// app's thread. The store's flag is the truth: this is what the engine knows without a
/// scan, and a message listed here whose flag is gone (delivered, made) is passed over.
struct OwnCopyQueue {
    /// Messages sent by this process whose copy is not made yet, in sending order.
    var messages: [MessageID] = []
    /// When the oldest of them was queued (nil: none): the copies are due `delayMs` later.
    var since: Int64?
    /// The store may hold flags left by a process that ended before making them: read at
    /// the first batch that has the keys.
    var scanned = false
    /// The batch's own timer (not the delivery timer: that one runs the sweep, and the
    /// sweep's erasure checkpoint, every time it fires) and when it is due.
    var timer: EventLoop.TimerID?
    var timerDue: Int64?

    /// How long after a send its copy is made at the latest (a meeting that starts sooner
    /// makes it sooner): long enough that the copies of a burst of sends share a transaction,
    /// and that most messages to a linked contact are delivered first (they then need none).
    static let delayMs: Int64 = 500
    /// The same while a meeting is in progress, which offers the copy once it exists: short,
    /// so that it is offered on that link while it lasts, still one batch for a burst.
    static let meetingDelayMs: Int64 = 50
    /// Copies made per transaction: the timers seal them on the event thread (~50 µs each,
    /// the node's lock released), so a long backlog goes in turns, the links' traffic
    /// handled in between.
    static let batchLimit = 256

    mutating func append(_ ids: [MessageID], at now: Int64) {
        guard !ids.isEmpty else { return }
        if messages.isEmpty { since = now }
        messages += ids
    }

    /// When the next batch is due: `delayMs` after the oldest queued send, `meetingDelayMs`
    /// while a meeting is in progress.
    func due(meeting: Bool) -> Int64? {
        guard let since, !messages.isEmpty else { return nil }
        return since + (meeting ? Self.meetingDelayMs : Self.delayMs)
    }
}
