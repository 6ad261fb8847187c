import YaOKLoop
import YaOKWire

/// One client connection's I/O state (loop thread only): its descriptor and secure
/// channel, the bounded read side (one partial frame at most) and write side, its session
/// once TLS is up, and where its subscribed mailboxes' delivery stands.
final class RelayConnection {
    let id: UInt64
    let fd: Int32
    let acceptedAt: UInt64
    /// The client's IPv4 address (host byte order), for the per-address cap.
    var address: UInt32 = 0
    /// Counted in `pendingByAddress` (from accept until READY or close).
    var countedPending = false
    var lastReceived: UInt64
    /// Made at the first readiness, so a connection that never speaks costs a descriptor
    /// and this object, not a TLS state.
    var channel: (any RelayChannel)?
    var handshakeDone = false
    var session: RelaySession?
    /// When READY went out: the session's lifetime counts from here.
    var readyAt: UInt64?
    var decoder: FrameDecoder
    var output = OutputQueue()
    /// The events the loop watches for it.
    var interest: EventLoop.IOEvents = .readable
    /// The channel is waiting to write (a handshake or read that needs to send first, or
    /// output the socket would not take).
    var wantsWrite = false
    /// Set once the last frame (an ERROR) is queued: nothing more is read, and the
    /// connection closes when the output drains or at this deadline.
    var closingDeadline: UInt64?
    /// It has subscribed (a mailbox added) or posted: past `activityGraceSeconds` after
    /// READY a session that has done neither ends.
    var active = false
    /// Frames decoded and not yet passed to the session (at most one read's): held while
    /// the relay's SUBSCRIBE signature budget has no credit, and it is not read meanwhile
    /// (`RelayServer+Subscriptions`).
    var heldFrames: ArraySlice<[UInt8]> = []
    var deferredForVerifications = false
    /// POSTs waiting for the disk.
    var pendingPosts = 0
    /// CARRY frames with the carry thread and not answered yet; whether its meeting opened.
    var pendingCarry = 0
    var carryOpened = false
    /// DELETE refs waiting for the disk.
    var pendingDeleteRefs = 0
    /// DELETE refs it may still send (a token bucket, refilled at `deleteRefsPerSecond`
    /// up to `deleteRefsBurst`), as of `deleteBudgetAt`; nil: full.
    var deleteBudget: Double?
    var deleteBudgetAt: UInt64 = 0
    /// DELETE refs read while a budget was spent, waiting for it to refill (at most
    /// `RelayServer.maxParkedDeleteRefs` plus one read's); reading goes on meanwhile, so
    /// its POSTs are not held behind its DELETEs. Whether it is in its address's queue.
    var parkedDeleteRefs: [StoredPacketRef] = []
    var queuedForDeleteBudget = false
    /// DELETE refs it has been given from the budgets (for tests: how evenly they are shared).
    var deleteRefsTaken = 0
    /// POSTs answered ACCEPTED in this session (for the session log).
    var posts = 0
    /// Why the session ended, once it has (the ERROR it was sent).
    var endReason: String?

    // Delivery (§8.3 "Delivering"). Each subscribed mailbox has a cursor: the sequence
    // number of the last packet sent, kept in the session's `subscriptions`. A new packet
    // is pushed live only while the mailbox is caught up and the output is short;
    // otherwise the mailbox is marked to be read from the store after its cursor, a page
    // at a time, as the output drains. These hold inline keys, and are let go when
    // drained (a SUBSCRIBE flood's 4,096 would otherwise keep their capacity).
    var cursors: SubscriptionTable { session?.subscriptions ?? SubscriptionTable() }
    private(set) var needsRead: [MailboxKey] = []
    private var needsReadSet = Set<MailboxKey>()
    /// Subscriptions admitted (`admitSubscriptions`) and counted per address, /24 and in
    /// all: the session's table also holds those of a SUBSCRIBE refused at the caps.
    var countedSubscriptions = 0
    /// Mailboxes of the one backlog read in flight.
    var reading = Set<MailboxKey>()

    /// Moves `mailbox`'s cursor (if it is subscribed).
    func setCursor(_ mailbox: MailboxID, _ cursor: Int64) {
        session?.subscriptions[mailbox] = cursor
    }

    init(id: UInt64, fd: Int32, now: UInt64) throws {
        self.id = id
        self.fd = fd
        acceptedAt = now
        lastReceived = now
        decoder = try FrameDecoder(maxLength: RelayFrame.maxLength)
    }

    var isClosing: Bool { closingDeadline != nil }

    func markNeedsRead(_ mailbox: MailboxID) { markNeedsRead(MailboxKey(mailbox)) }

    func markNeedsRead(_ mailbox: MailboxKey) {
        guard !needsReadSet.contains(mailbox) else { return }
        needsReadSet.insert(mailbox)
        needsRead.append(mailbox)
    }

    /// Takes up to `count` mailboxes to read next.
    func takeNeedsRead(_ count: Int) -> [MailboxKey] {
        let taken = Array(needsRead.prefix(count))
        if taken.count == needsRead.count {
            needsRead = []
            needsReadSet = []
        } else {
            needsRead.removeFirst(taken.count)
            for m in taken { needsReadSet.remove(m) }
        }
        return taken
    }

    /// Whether a packet just stored in `mailbox` can go out now, without the store.
    func canPushLive(_ mailbox: MailboxID, highWater: Int) -> Bool {
        let key = MailboxKey(mailbox)
        return cursors.contains(key) && !needsReadSet.contains(key) && !reading.contains(key)
            && output.count < highWater && !isClosing
    }
}
