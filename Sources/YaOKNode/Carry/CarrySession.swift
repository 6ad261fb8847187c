import YaOKWire
import YaOKCrypto
import YaOKStore

/// One link's meeting (docs/PROTOCOL.md §12): its reconciliation, what was offered and
/// asked for either way, the hand-overs awaiting an answer, and the byte budget. Kept by
/// the engine (`CarryState.sessions`) beside the link's own state, dropped when it closes.
struct CarrySession {
    /// Who handed packets over on this link, for the store's quota (§10.9): random per link,
    /// never an identity.
    let depositor = CarryDepositor.random()
    /// Whether this node takes and hands on others' packets on this link (the mode, and for
    /// `contactsOnly` whether the peer is a contact). When false it still reconciles (as an
    /// empty store) and takes the packets that are its own.
    let carries: Bool
    /// A meeting with a relay (§12.9): it keeps wait-phase copies, so what this node hands
    /// it goes with budget 1 and costs none of its own.
    var toRelay = false
    var reconciler: Reconciler?
    /// Identities offered to the peer (never offered twice), and those the peer took,
    /// refused, or handed us (never offered or handed back to it on this link).
    var offered: Set<[UInt8]> = []
    var settled: Set<[UInt8]> = []
    /// Own copies not offered yet because recognition had not settled on this side when they
    /// would have been (§12.3 step 2): the peer may be the recipient of some. Offered once it
    /// settles, but those to the peer. (Bounded by the store: own copies are its packets.)
    var heldOwn: Set<[UInt8]> = []
    /// Identities we asked the peer for and have not received yet.
    var asked: Set<[UInt8]> = []
    /// The lowest budget of a packet to carry still asked for on this link (2: any that may
    /// spread). Raised when the store refuses one of this link's packets: over the hour's
    /// quota, nothing more (one's own mail still is); full, only budgets above the refused
    /// one (a lower or equal one would be refused too). Without it a peer past the link's
    /// hourly bytes (not packets), or offering low budgets to a full store, was asked for
    /// every packet it offered, each then refused after a store transaction.
    var minSpreadBudget: Int = 2
    /// Packets the peer asked for, in the order asked, not yet handed over (and every one
    /// ever queued, so each is queued once).
    var queue: [[UInt8]] = []
    var queued: Set<[UInt8]> = []
    /// Copies handed over and not answered yet: the budget given (0 for a wait-phase copy,
    /// which costs the giver nothing), the hop limit the giver keeps, and the size (the
    /// flow window).
    var awaiting: [[UInt8]: (given: UInt8, keptHop: UInt8, size: Int)] = [:]
    var awaitingBytes = 0
    /// Bytes of carried packets sent on this link (the per-encounter budget).
    var bytesHanded = 0
    /// Something happened on this link since the last `carryActivity` event, and when the
    /// last one went out (at most one per link per minute).
    var activity = false
    var lastActivityEvent: Int64 = .min

    init(carries: Bool) { self.carries = carries }
}

extension CarrySession {
    /// Carried packet bytes one meeting hands over at most: §11's encounter budget (a
    /// second or two of a Bluetooth LE link of a few hundred KB/s), oldest expiry first.
    static let encounterBytes = 256 * 1024
    /// Carried packet bytes handed over and not answered yet: well below the receiver's
    /// queue for one link and a LAN write queue (256 KiB), so a burst never trips either.
    static let windowBytes = 64 * 1024
    /// Packets asked for and not received yet, at most: a peer offering without end is
    /// asked for no more than a store's worth.
    static let maxAsked = 2_048
}
