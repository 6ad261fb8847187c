import YaOKWire
import YaOKStore

/// One client session's meeting with the relay (docs/PROTOCOL.md §12.9): the node's
/// `CarrySession`, from the relay's side. The client is always the initiator; the relay
/// answers. Dropped when the session ends.
struct RelayCarryMeeting {
    /// Who deposits on this session, for the quota: a keyed hash of the client's IPv4
    /// address (`RelayCarrier.depositor`), never the address itself.
    let depositor: CarryDepositor
    var reconciler: Reconciler?
    /// Reconciliations opened in this session (each reads the store's keys): bounded.
    var reconciliations = 0
    var offered: Set<[UInt8]> = []
    var settled: Set<[UInt8]> = []
    var asked: Set<[UInt8]> = []
    var queue: [[UInt8]] = []
    var queued: Set<[UInt8]> = []
    /// Copies handed over and not answered yet, and their bytes (the window).
    var awaiting: [[UInt8]: Int] = [:]
    var awaitingBytes = 0
    /// Bytes of carried packets handed to the client in this session.
    var bytesHanded = 0
    /// The store refused one of this client's deposits for its hourly quota or for room:
    /// nothing more is asked in this session. Without it a client past its hour's bytes
    /// (but not its packets) was asked for, and refused, every packet it offered, and each
    /// one it handed grew `settled` for the rest of the session.
    var asksStopped = false

    init(depositor: CarryDepositor) { self.depositor = depositor }

    /// The node's window (§12.3 step 4); a relay session is a long link on the internet,
    /// so its per-session budget is larger than a meeting's 256 KiB: 4 MiB per session
    /// (a session lasts an hour; the next one meets again).
    static let windowBytes = 64 * 1024
    static let sessionBytes = 4 << 20
    static let maxAsked = 2_048
    /// A client reconciles at session start and when it has new packets: 64 times a session
    /// at most (each reads the store's keys once, or shares the relay's snapshot).
    static let maxReconciliations = 64
    /// Packets offered in one session at most: a client with an empty store lacks the whole
    /// store (50,000 by default, 2 MB of offers and as much state); past this it is shown a
    /// random 2,048 of them per session (each session another draw), so every packet is
    /// shown to every client now and then at a bounded cost (~130 KB of state a session).
    static let maxOffered = 2_048
}
