import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Sending (US-020, US-022): the outbox, receipts, acknowledgements and retries.
extension Node {
    /// How many packets one link takes per pump before the next turn of the loop.
    static let pumpBatch = 256
    /// How long after a timer's sweep failed (a store error) the timer tries again.
    static let failedSweepRetryMs: Int64 = 10_000
    /// How many bytes one link or carrier may have unconfirmed. Below the receiver's queue
    /// for one link (`maxQueuedBytesPerLink`, 1 MiB) and the transports' write queues (1 MiB),
    /// so pacing by receipts never trips either; above what the slowest link (Bluetooth LE,
    /// about 600 KiB/s) carries in one receipt's round trip, so it never waits idle. And
    /// several of the receiver's batches deep: the receiver confirms what each of its drains
    /// took after that drain's disk sync, and with 128 KiB (a dozen 10 KB messages, one
    /// drain's worth) sender and receiver took turns, each idle while the other synced; at
    /// 512 KiB the next packets are already queued while a drain commits (a batch of 10 KB
    /// messages over a memory link on disk: ~1.45× faster).
    static let linkWindowBytes = 512 * 1024
    /// A link on which this side has sent nothing for this long gets a keepalive (§5.4), on
    /// every transport: a radio the app brings has no keepalive of its own, and the peer's
    /// transport closes a link it hears nothing on (Bluetooth LE after 90 s).
    public static let linkKeepaliveMs: Int64 = 20_000

    /// Sends `text` to contact `contactID`: encrypts it, stores it and queues it in one
    /// transaction, and returns the message at once, `pending`. It goes out over the first
    /// link to the contact, in the order sent; it is `sent` when a link confirms receipt,
    /// `delivered` when the recipient's acknowledgement returns, and `failed` (retried after
    /// 1, 5, 15 minutes, then hourly until it expires) when an attempt fails.
    /// Errors: `emptyMessage`, `messageTooLarge` ("Message too large (max 10KB)"), `notFound`.
    @discardableResult
    public func send(to contactID: Int64, text: String) throws -> Message {
        try send([(contactID, text)])[0]
    }

    /// Sends several messages in one transaction: one disk sync for all of them (an app
    /// that sends a batch, or forwards a backlog). All or nothing: if one is refused,
    /// none is stored. Same rules and statuses as `send(to:text:)`. A batch of four or more is
    /// sealed on the calling thread and short-lived helper threads (`ConcurrentMap`, up to
    /// four threads in all), joined before this returns.
    @discardableResult
    public func send(_ batch: [(contactID: Int64, text: String)]) throws -> [Message] {
        guard !batch.isEmpty else { return [] }
        for item in batch { try MessageText.validate(item.text) }
        // Planned under the lock (sender times, keys, a ticket), sealed outside it on this
        // thread, committed with every other send waiting at that moment: one disk sync for
        // the group, and this returns once its rows are durable (DeliveryEngine+SendPlan).
        // (`withUnlocked`, not `withUnlockedEngine`: planning decides nothing to perform, and
        // each section's end with traffic queued runs a flush.)
        let (ticket, planned, keys) = try withUnlocked(section: .sendPlan) { store, keys, s in
            let (ticket, planned) = try s.delivery.planSend(batch, store, keys)
            sendCommits.taken(ticket)
            return (ticket, planned, keys)
        }
        let sealed = Result { try SealedSend(keys: keys, planned: planned) }
        return try sendCommits.commit(ticket: ticket, sealed) { try writeSendGroup($0) }.get()
    }

    /// The group commit's first stage for `group` (SendCommitQueue): its rows written under
    /// the lock without a sync; then its sync, and its events. Until the group is durable no
    /// other section's pump hands its messages on (UnsyncedSends); after its events they
    /// are released, and pumped if a pump passed them over meanwhile.
    func writeSendGroup(_ group: [SealedSend]) throws -> SendCommitQueue<SealedSend, [Message]>.Written {
        let ((results, unsynced, hold), sync, perform) = try withUnlockedEngineUnsynced(section: .sendWrite) { engine, store, keys in
            let start = engine.effects.end
            let results = try engine.commitSends(group, store, keys)
            // Its own pump's units wait in the queue for the sync, whoever flushes meanwhile.
            return (results, engine.unsyncedSends, engine.holdTraffic(from: start))
        }
        let ids = results.flatMap { (try? $0.get())?.map(\.messageID) ?? [] }
        return .init(results: results, sync: { try sync.sync() }, log: ObjectIdentifier(sync), announce: { [self] in
            // MESSAGE_STORED is posted before the traffic is released: once it is, any
            // flusher (the event thread's) may hand the units on, and their receipt could be
            // drained and told before it.
            perform {
                guard let hold else { return }
                let released = withState(section: .sendWrite) { s in
                    s.delivery.releaseTraffic(hold)
                    return s.delivery.sendTrafficReleased
                }
                released?()
            }
            // After the group's events, so a receipt's come later.
            if unsynced.release(ids) { _ = try? withEngine { engine, store, keys in try engine.pump(store, keys) } }
        })
    }

    /// How many group commits `send` made, holding how many sends, with how many disk syncs,
    /// and the time each stage took (for yaok-bench).
    package var sendCommitStatistics: SendCommitStatistics { sendCommits.statistics }

    /// Runs `body` under the node's lock with the store's database (yaok-bench and tests
    /// count the statements and commits one send makes).
    package func withDatabase<R: Sendable>(_ body: (Database) throws -> R) throws -> R {
        try withStore { store, _ in try body(store.db) }
    }

    /// Work items posted to the node's event thread so far (each a turn of it).
    package var eventThreadPosts: Int { loop.postsAccepted }

    /// Times the node's event thread was woken from its sleep to take work so far.
    package var eventThreadWakeUps: Int { loop.wakeUps }

    /// Tries a pending, failed or sent message again now; it is `pending` again until a link
    /// or relay confirms it. `sent` is allowed (docs/PROTOCOL.md §6.1): a relay that stored it
    /// may have lost it, and its ack may never come. One whose packet expired is sealed
    /// afresh (same message ID, new time). `notFound` for no such outgoing message;
    /// `invalidArgument` if it was already delivered.
    @discardableResult
    public func retry(_ messageID: MessageID) throws -> Message {
        try withUnlockedEngine { engine, store, keys in try engine.retry(messageID, store, keys) }
    }

    /// Messages still on their way (pending or failed), in sending order.
    public func outbox() throws -> [OutboxEntry] {
        try withUnlockedEngine { engine, store, keys in try engine.outbox(store, keys) }
    }

    /// What the timer runs: retries and deadlines due now by the node's clock. Own carried
    /// copies owed are made first (a batch earlier than their own timer's is only a smaller
    /// one; a failure leaves them owed, and the sweep still runs), unless the app is still
    /// sending (OwnCopyQueue.quietMs).
    package func runDeliveryTimers() {
        if (try? withEngine { engine, _, _ in engine.ownCopiesWaitForPause }) == false { _ = try? makeOwnCopyBatch() }
        _ = try? withEngine(section: .timers) { engine, store, keys in try engine.timerFired(store, keys) }
    }
}

/// The one place the 10 KB limit and the empty-text rule are checked (AC-020-04, -05).
public enum MessageText {
    public static let maxBytes = Envelope.maxBodyLength

    public static func validate(_ text: String) throws {
        guard !text.isEmpty, !text.trimmingWhitespace().isEmpty else { throw YaOKError(.emptyMessage, "Message is empty") }
        guard text.utf8.count <= maxBytes else { throw YaOKError(.messageTooLarge) }
    }
}

extension Node {
    /// One message we sent, with its current status. `notFound` if there is none.
    public func outgoingMessage(_ id: MessageID) throws -> Message {
        try withUnlocked { store, keys, _ in
            guard let m = try store.outgoingMessage(messageID: id.bytes, cipher: keys.cipher) else {
                throw YaOKError(.notFound, "No such outgoing message")
            }
            return m
        }
    }
}

extension Node {
    /// One stored message of conversation `conversationID`, incoming or outgoing (what a
    /// `messageReceived` event names). `notFound` if there is none.
    public func message(_ conversationID: Int64, _ id: MessageID) throws -> Message {
        try withUnlocked { store, keys, _ in
            guard let m = try store.message(conversation: conversationID, messageID: id.bytes, cipher: keys.cipher) else {
                throw YaOKError(.notFound, "No such message")
            }
            return m
        }
    }
}
