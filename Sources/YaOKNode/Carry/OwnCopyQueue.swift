import YaOKWire
import YaOKLoop

/// The own carried copies still to be made (docs/PROTOCOL.md §12.6, "Sending"): `Node.send`
/// only marks its outbox row (Store+CarryOwn.swift) and queues the message here; the engine
/// makes the copies later, many in one transaction (DeliveryEngine+CarryOwnCopies), off the
/// app's thread. The store's flag is the truth: this is what the engine knows without a
/// scan, and a message listed here whose flag is gone (delivered, made) is passed over.
struct OwnCopyQueue {
    /// Messages sent by this process whose copy is not made yet, in sending order.
    private(set) var messages: [MessageID] = []
    /// The recipient of each, and how many are queued to each recipient: a meeting with the
    /// recipient of every queued message does not hurry their copies (`due`).
    private var recipients: [MessageID: Int64] = [:]
    private var countTo: [Int64: Int] = [:]
    /// When the first of them was queued since none was (nil: none), or the last failed
    /// batch or one that found copies waiting for their sync: the copies are due `delayMs`
    /// later. A batch that leaves some queued otherwise keeps it, so the rest are due at once.
    var since: Int64?
    /// When the app last queued one (`append`): while sends keep coming, the copies wait
    /// for a pause (`due`).
    private var lastQueued: Int64?
    /// The store may hold flags left by a process that ended before making them: read at
    /// the first batch that has the keys.
    var scanned = false
    /// The batch's own timer (not the delivery timer: that one runs the sweep, and the
    /// sweep's erasure checkpoint, every time it fires) and when it is due.
    var timer: EventLoop.TimerID?
    var timerDue: Int64?
    /// Messages settled by batches inside another section's transaction (a meeting's start
    /// in the inbound drain), and the connection's count of rollbacks before the first: that
    /// transaction may still roll their copies back, so they stay queued until the next
    /// batch of its own, which takes them off if no rollback happened since (then it
    /// committed: their flags are gone) instead of reading each flag gone.
    var settledInside: (messages: Set<MessageID>, rollbacks: Int)?

    /// How long after a send its copy is made at the latest (a meeting that starts sooner
    /// makes it sooner): long enough that the copies of a burst of sends share a transaction,
    /// and that most messages to a linked contact are delivered first (they then need none).
    static let delayMs: Int64 = 500
    /// The same while a meeting is in progress, which offers the copy once it exists: short,
    /// so that it is offered on that link while it lasts, still one batch for a burst.
    static let meetingDelayMs: Int64 = 50
    /// Copies made per transaction: the timers seal them on the event thread (~40 µs each,
    /// the node's lock released) and plan and commit them under the lock (~30 µs each), so
    /// a long backlog goes in turns, the links' traffic and the app's sends handled in
    /// between. 256 held the lock ~8 ms twice a batch (`yaok-bench delivery`'s lock figures),
    /// the senders' longest waits; 32 hold it ~1 ms, and a transaction of their own costs no
    /// disk sync (loss-tolerant) unless a key of ours is minted at its commit.
    static let batchLimit = 32
    /// While the app keeps sending (the last send less than `quietMs` before the batch would
    /// be due), the batch waits for a pause, at most until `maxDeferMs` after the oldest send
    /// owing a copy. The copies are for strangers met later; during a burst the sends, and
    /// the links' traffic on the event thread that seals the copies, come first, and a
    /// message delivered meanwhile needs none (a burst of 2,000 sends from 4 threads on two
    /// cores: copies sealed during it took ~40 % of the CPU, `yaok-bench delivery`).
    static let quietMs: Int64 = 50
    static let maxDeferMs: Int64 = 5_000

    /// Queues messages sent now to the recipients given (their contact IDs), after those queued.
    mutating func append(_ sent: [(id: MessageID, contactID: Int64)], at now: Int64) {
        guard !sent.isEmpty else { return }
        if messages.isEmpty { since = now }
        lastQueued = now
        for (id, contactID) in sent where recipients.updateValue(contactID, forKey: id) == nil {
            messages.append(id)
            countTo[contactID, default: 0] += 1
        }
    }

    /// Queues messages a process that ended left owed, ahead of those queued (they were
    /// sent before them), as sent at `now` at the latest.
    mutating func prepend(_ left: [(id: MessageID, contactID: Int64)], at now: Int64) {
        let fresh = left.filter { recipients[$0.id] == nil }
        guard !fresh.isEmpty else { return }
        for (id, contactID) in fresh {
            recipients[id] = contactID
            countTo[contactID, default: 0] += 1
        }
        messages = fresh.map(\.id) + messages
        since = min(since ?? now, now)
    }

    /// Takes `settled` off the queue (made, or no longer owed).
    mutating func remove(_ settled: Set<MessageID>) {
        messages.removeAll { settled.contains($0) }
        for id in settled {
            guard let contactID = recipients.removeValue(forKey: id) else { continue }
            countTo[contactID] = countTo[contactID].map { $0 - 1 }.flatMap { $0 > 0 ? $0 : nil }
        }
        if messages.isEmpty { (since, lastQueued) = (nil, nil) }
    }

    /// When the next batch is due: `delayMs` after `since` (later while the
    /// app keeps sending: `quietMs`), `meetingDelayMs` while a meeting is in progress that
    /// the copies could go out on: `meetings` are the
    /// contact IDs of the peers met (nil: a stranger, or a relay). A meeting with the
    /// recipient of every queued message is not one: its link carries them routed, and a
    /// copy is never offered to its own recipient (`offer`, PROTOCOL.md §12.3); over a busy
    /// link to a contact, hurrying them only sealed and stored a copy of each message the
    /// link was about to deliver.
    func due(meetings: [Int64?]) -> Int64? {
        guard let since, !messages.isEmpty else { return nil }
        let hurried = hurried(meetings)
        let due = since + (hurried ? Self.meetingDelayMs : Self.delayMs)
        guard waitsForPause(at: due, hurried: hurried), let lastQueued else { return due }
        return min(lastQueued + Self.quietMs, since + Self.maxDeferMs)
    }

    /// Whether the app's sends keep the batch waiting at `now` (`quietMs`, `maxDeferMs`): the
    /// timers then make none. A meeting that could carry the copies does not wait.
    func waitsForPause(at now: Int64, meetings: [Int64?]) -> Bool {
        waitsForPause(at: now, hurried: hurried(meetings))
    }

    private func waitsForPause(at now: Int64, hurried: Bool) -> Bool {
        guard !hurried, let since, let lastQueued, !messages.isEmpty else { return false }
        return lastQueued + Self.quietMs > now && now < since + Self.maxDeferMs
    }

    private func hurried(_ meetings: [Int64?]) -> Bool {
        meetings.contains { peer in peer.map { (countTo[$0] ?? 0) < messages.count } ?? true }
    }
}
