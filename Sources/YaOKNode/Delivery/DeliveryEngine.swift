import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The delivery engine (docs/ARCHITECTURE.md, "The delivery engine"): links, carriers, the
/// outbox pump, the inbound pipeline, receipts, acknowledgements and retries. It owns the
/// delivery state and records what it decides in one value, `effects` (DeliveryEffects.swift),
/// which the node performs outside its lock; a batch that fails is undone through one path,
/// `batch`. The node keeps the lock, the store, the keys, contacts and identity, and lends the
/// engine the store and the keys for each locked section (`Node.withEngine`).
///
/// Files: DeliveryEngine+Links (handshake, link units, presence, the contact directory),
/// +Inbound (routed packets in), +Pump (the outbox out, receipts, retries, the timer),
/// +Carriers (relay sessions), +CarrierAckWatch, +Reseal, +StatedRelayIdentifiers.
struct DeliveryEngine {
    /// The node's wall clock (`Node.Options.clock`) and event loop (timers, posts), and the
    /// node itself for the callbacks of those timers.
    let clock: @Sendable () -> Int64
    let loop: EventLoop
    /// `Node.Options.callerRunsTimers`: no timer is armed on `loop`.
    var callerRunsTimers = false
    weak var node: Node?
    /// What the engine decided and has not done yet.
    var effects = DeliveryEffects()

    var links: [UInt64: LinkState] = [:]
    var nextLinkID: UInt64 = 1
    /// Packets handed to a link or carrier and not yet confirmed by a receipt.
    var inflight = InFlight()
    /// The node's link key and certificate: loaded at the first unlock and kept while locked
    /// (not wiped by `lock`), so links go on in a locked phone (docs/ARCHITECTURE.md).
    var linkKey: LinkKey?
    var linkCertificate: LinkCertificate?
    /// Contacts by X25519 key with their route and ack keys, and the incoming routing tags
    /// of the days seen: built when unlocked, dropped on lock and whenever contacts change.
    var peers: PeerDirectory?
    /// The contacts as digests, built with `peers` and kept while locked (nil until the
    /// first unlock of this process).
    var contactDigests: ContactKeyDigests?
    /// The contacts' link keys (§5.9), derived from the identity secret at unlock and kept,
    /// like the link key, while locked: a locked phone still recognises its contacts on new
    /// links. Rebuilt when contacts change; dropped on reset and close.
    var contactLinkKeys: [ContactLinkKey]?
    var timer: EventLoop.TimerID?
    var timerDue: Int64?
    var transports: [String: TransportEntry] = [:]
    /// The internet status at the last look (INTERNET_CHANGED when Available/Unavailable
    /// changes) and the timer that looks at the default route again while a transport runs.
    var internet: InternetStatus?
    var internetTimer: EventLoop.TimerID?
    /// Units received and not processed yet: drained in one transaction per loop turn, so
    /// a burst costs one disk sync, not one per packet.
    var inbound: [(link: UInt64, unit: [UInt8])] = []
    var drainPosted = false
    var inboundBytes = 0
    /// Contacts connected right now, with the transport's display name (in memory only).
    var online: [Int64: String] = [:]
    /// A flush is handing units and commands to transports (on the event thread, or an app
    /// thread's for links that take units on any thread): one flusher at a time, so a link's
    /// units leave in sealing order. A flush started meanwhile (a transport that answers at
    /// once, another thread's section) leaves the new ones to it (`Node.flushOutgoing`).
    var flushing = false
    /// The event thread's inbound drain committed and its disk sync has not returned yet
    /// (`Node.withEngineSyncedAfter`): nothing queued may leave until it has (an ack of a
    /// message the drain stored may be queued, and a failed sync takes back what was queued
    /// since the drain began), so no flush takes traffic meanwhile; the event thread
    /// flushes once the sync is over.
    var drainSyncOwed = false
    /// Where each send group written and not yet synced began queuing traffic
    /// (`Node.writeSendGroup`, by hold): its own pump queued its messages' units, which must
    /// not leave before the group is durable (`UnsyncedSends`), and whatever was queued after
    /// them waits behind them (a link's units leave in sealing order). So a flush takes only
    /// what is before the first of them (`flushLimit`); the group's end releases its hold
    /// and flushes.
    var heldTraffic: [UInt64: DeliveryEffects.Position] = [:]
    var nextTrafficHold: UInt64 = 0
    /// Store-and-forward sessions (relays), by the same ID space as links.
    var carriers: [UInt64: CarrierState] = [:]
    /// Packets refused from carriers, per transport and hour: logged a few times per hour
    /// per relay, not per session (a relay that reconnects often must not flood the log).
    var carrierRejections: [String: (count: Int, since: Int64)] = [:]
    /// Messages relays stored, and relays that missed their acknowledgement window.
    var ackWatch = CarrierAckWatch()
    /// The identifier each configured relay stated: two that state one are noticed (§8.4).
    var statedIdentifiers = StatedRelayIdentifiers()
    /// `invalid_text` events logged per contact today (a contact must not flood the log).
    var invalidTexts = InvalidTextLog()
    /// The sender time of the last message sent (they strictly increase).
    var lastSentAt: Int64 = 0
    /// The ticket the next planned send takes (DeliveryEngine+SendPlan, SendCommitQueue).
    var nextSendTicket: UInt64 = 0
    /// Sends a group's write sealed again under the lock (their key choice went stale), and
    /// the time that took (yaok-bench: `Node.lockStatistics`).
    var reseals: (count: Int, nanos: UInt64) = (0, 0)
    /// TEST ONLY: when set, a group commit of sends throws it after writing every row, as
    /// a failing COMMIT (disk full, an I/O error) would.
    package var sendCommitFault: (any Error)?
    /// TEST ONLY: called between a batch of own carried copies sealed and committed
    /// (`Node.makeOwnCopyBatch`), outside the node's lock.
    package var ownCopySealing: (@Sendable () -> Void)?
    /// TEST ONLY: called when a pump has read the held sends (`UnsyncedSends.held`) and
    /// before it passes any over, under the node's lock.
    package var heldRead: (@Sendable () -> Void)?
    /// TEST ONLY: called between an inbound drain's commit and its disk sync
    /// (`Node.withEngineSyncedAfter`), outside the node's lock.
    package var drainSyncing: (@Sendable () -> Void)?
    /// TEST ONLY: called once a send group's traffic is released to the flush
    /// (`Node.writeSendGroup`), outside the node's lock.
    package var sendTrafficReleased: (@Sendable () -> Void)?
    /// docs/PROTOCOL.md §13, Node.Options.forwardSecrecy.
    var forwardSecrecy = false
    var lastKeyExpiry: Int64 = .min
    /// Contacts whose ring failed its check at an expiry, logged once (DeliveryEngine+ForwardSecrecy).
    var damagedRingsLogged: Set<Int64> = []
    /// The last packet dropped for its time: the link and how far its creation time was
    /// from our clock (positive: ahead), for diagnostics ("a contact's clock is off").
    var lastClockSkew: (link: UInt64, ms: Int64)?
    /// Why held packets could not be opened at the last try (storage), for diagnostics.
    var heldError: String?
    /// Carrying for others: the mode, the caps and the counters (Carry/CarryState.swift).
    var carry = CarryState()
    /// Our acks that a link or carrier took (`handedOn`), still on the outbox: removed by the
    /// next batch that writes anyway, so that a drain that only confirms acks (one per
    /// message we receive) commits nothing and syncs nothing. The pumps skip them. A removal
    /// lost with the process only sends that ack again, which the contact takes as the
    /// duplicate it is (docs/PROTOCOL.md §6.2).
    var takenAcks: Set<MessageID> = []
    /// Past this many, the next batch removes them whether or not it writes anything else.
    static let maxTakenAcks = 1_024
    /// Messages of send groups written and not synced yet: the pumps skip them (UnsyncedSends.swift).
    let unsyncedSends = UnsyncedSends()

    init(clock: @escaping @Sendable () -> Int64, loop: EventLoop, callerRunsTimers: Bool = false) {
        self.clock = clock
        self.loop = loop
        self.callerRunsTimers = callerRunsTimers
    }

    var now: Int64 { clock() }

    /// Runs `body` in one transaction: the one rollback path of the engine. When the
    /// transaction fails, nothing the batch decided happened: its units (receipts) and
    /// carrier commands are not sent, its events not emitted (`DeliveryEffects.rollback`),
    /// and the duplicate filter forgets its in-memory front (else a retry of a packet that
    /// was never stored would pass as a duplicate). The error is rethrown.
    ///
    /// The commit syncs the disk only when the batch wrote something that must be durable
    /// before what it decided leaves (`Database.transactionSyncedAsNeeded`): a message
    /// stored, an ack queued or applied, a key ring changed — every write but the few
    /// marked `lossTolerant` (a link receipt's `sent`, taken acks off the outbox, a batch of
    /// own carried copies but for a key it mints: DeliveryEngine+CarryOwnCopies), which
    /// an OS crash or power loss may take back harmlessly (docs/ARCHITECTURE.md, "Disk
    /// syncs"). A sync that fails fails the batch the same way, its rows committed.
    mutating func batch<R>(_ store: Store, _ body: (inout DeliveryEngine) throws -> R) throws -> R {
        let mark = effects.mark
        do {
            var removed: Set<MessageID> = []
            let outermost = !store.db.inTransaction  // a savepoint's writes may still roll back
            let result = try store.db.transactionSyncedAsNeeded {
                let changesBefore = store.db.totalChanges
                let result = try body(&self)
                if outermost, !takenAcks.isEmpty,
                   store.db.totalChanges != changesBefore || takenAcks.count >= Self.maxTakenAcks {
                    // This commit writes anyway: the taken acks leave the outbox with it.
                    removed = takenAcks
                    try store.db.lossTolerant { for id in removed { try store.removeOutbox(id) } }
                }
                return result
            }
            takenAcks.subtract(removed)
            return result
        } catch {
            effects.rollback(to: mark)
            store.seen.dropFront()
            throw error
        }
    }
}
