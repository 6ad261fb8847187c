import YaOKSupport
import YaOKLoop

/// One L2CAP LE CoC channel: the shared fields (`SocketConnection`), its address, its
/// SDU queue and MTUs. Touched only under the transport's lock. Its `connecting` phase
/// spans the kernel's scan for the peer's advertising, the LE connection and the channel.
final class BLEConnection: SocketConnection {
    let remote: BLEAddress
    /// SDUs waiting for the kernel to take them (it said EAGAIN: no credits or no buffer).
    /// Capped by `Options.maxWriteQueueBytes`.
    var queue: [[UInt8]] = []
    var queuedBytes = 0
    /// Monotonic ns of the last time the queue moved (or became non-empty).
    var lastWriteProgress: UInt64 = 0
    var sendMTU = 0
    var receiveMTU = 0
    /// The most bytes the write queue has held (`Options.maxWriteQueueBytes` bounds it).
    var peakQueuedBytes = 0

    init(id: UInt64, fd: Int32, remote: BLEAddress, direction: Direction, phase: Phase, now: UInt64, nowMs: Int64) {
        self.remote = remote
        super.init(id: id, fd: fd, direction: direction, phase: phase, now: now, nowMs: nowMs)
    }

    override var closeAddress: String { remote.text }
}

/// A peer heard advertising: its address, its current token, when. No identity.
struct BLEPeer {
    var token: [UInt8]
    var rssi: Int8
    let firstSeenMs: Int64
    var lastSeenMs: Int64
    var lastSeen: UInt64
    /// Monotonic ns since when we have heard it without being connected to it.
    var unconnectedSince: UInt64?
    var lastAttempt: UInt64?

    // Discovery hardening (PROTOCOL.md §9.2): where to connect, and the backoff that keeps
    // fake advertisers from taking every attempt.
    /// The PSM its advertisement names (0x0081 for version 1).
    var psm: UInt16 = BLETransport.defaultPSM
    /// Outbound connects to it that failed in a row; 0 again once a channel with it opens.
    var failures = 0
    /// Monotonic ns before which it is not connected to again (exponential backoff).
    var retryAt: UInt64 = 0
    /// A channel with it has authenticated a peer not known to be a stranger (now or before
    /// its last close: `BLEState.recentlyLinked`): tried before strangers, the last to be
    /// evicted from a full table, and given the full `connectTimeout`.
    var linked = false
    /// Advertisements heard from it: a full table drops the least heard first, so a crowd of
    /// fresh addresses each heard once replace one another, not a peer heard run after run
    /// (whose fallback clock, `unconnectedSince`, would start again each time it came back).
    var sightings = 0
    /// Heard since our last connect attempt to it. A never-linked address gets one attempt
    /// per sighting: one heard once and gone (a fake from a fresh random address) is not
    /// tried again from the table.
    var heardSinceAttempt = true
}

/// The adapter the transport runs on.
struct BLEAdapter {
    let index: UInt16
    var name: String { "hci\(index)" }
    let address: BLEAddress
    var powered: Bool
    /// The Add Advertising instance the transport owns: always the adapter's highest, so
    /// that a start after a crash takes over the instance the crashed run left behind.
    let instance: UInt8
    /// LE privacy is on: the kernel advertises from a resolvable private address it renews
    /// (otherwise from the adapter's fixed address, which lets an observer follow it).
    var privacy = false
}

/// Everything the transport's lock protects.
struct BLEState: ConnectionTableState {
    var running = false
    var run: UInt64 = 0
    /// Weak, as in the LAN transport: the node owns its transports.
    weak var opener: (any LinkOpener)?
    var loop: EventLoop?
    var mgmt: MgmtSocket?
    var adapter: BLEAdapter?
    /// The adapter has been removed (unplugged); it may come back with the same index.
    var adapterGone = false
    var listener: Int32 = -1
    var token: [UInt8] = []
    var previousToken: [UInt8]?
    var tokenDrawnAt: UInt64 = 0
    var tokensDrawn = 0
    var advertising = false
    var advertisingError: String?
    /// The fresh token was handed to the kernel while the adapter was off (Add Advertising
    /// is stored then): at power-on the kernel advertises it by itself, and replacing it
    /// would stop and restart advertising just as peers connect to it (see `poweredLocked`).
    var advertisingStoredWhileOff = false
    /// Monotonic ns when the adapter last started advertising for us (start, power-on); 0:
    /// not advertising. With `reannouncedSinceAdvertising`: the one re-announcement made when
    /// nobody was heard (BLETransport+Reannounce.swift).
    var advertisingSince: UInt64 = 0
    var reannouncedSinceAdvertising = false
    /// Monotonic ns of the last re-announcement, and how many there were.
    var lastReannounceAt: UInt64?
    var reannounces = 0
    /// Set when the transport found the adapter's "advertising" setting on and turned it off
    /// (with it on, the kernel makes outgoing LE connections in the peripheral role).
    var advertisingSettingCleared = false
    var discovering = false
    /// A discovery run (ours, or another program's, whose results reach us too) has started
    /// since the adapter was last powered on: until then, and until it advertises, the
    /// transport reports connecting (`BLETransport.connection`). Not cleared when discovery
    /// pauses for an outbound connect, which would make the state flap.
    var scanStarted = false
    /// Monotonic ns of the last Start Discovery sent and not yet answered (0: none).
    var discoveryRequestedAt: UInt64 = 0
    /// Monotonic ns of the last Stop Discovery sent while a run was on (0: none pending).
    /// If no "Discovering off" follows within `BLETransport.discoveryStopDeadline`, the
    /// event is taken as lost: discovery is assumed off and asked for again.
    var discoveryStopRequestedAt: UInt64 = 0
    /// Stop Discovery requests whose "Discovering off" never came.
    var discoveryStopsAssumed = 0
    /// Monotonic ns before which discovery is not requested again (after a failure).
    var discoveryRetryAt: UInt64 = 0
    var discoveryRuns = 0
    /// Monotonic ns when the current discovery run started (0: none running).
    var discoveryStartedAt: UInt64 = 0
    /// Runs this transport ended early (`Options.discoveryRunLength`).
    var discoveryRestarts = 0
    var discoveryError: String?
    var advertsHeard = 0
    var startedAtMs: Int64 = 0
    var startedAt: UInt64 = 0
    /// ms after start when a peer was first heard, for diagnostics and benchmarks.
    var firstPeerAfterMs: Int64?
    var connections: [UInt64: BLEConnection] = [:]
    var nextID: UInt64 = 1
    var discovered: [BLEAddress: BLEPeer] = [:]
    /// The token each peer advertised while its channel was open, after the channel closed:
    /// ignored from that address until the deadline (monotonic ns). See `closeLocked`.
    var staleTokens: [BLEAddress: (token: [UInt8], until: UInt64)] = [:]
    var staleAdvertsIgnored = 0
    /// Peers dropped from `discovered` when their channel closed, and when (monotonic ns):
    /// put back if our own adapter turns out to have gone off (see `poweredLocked`).
    var lostPeers: [BLEAddress: (peer: BLEPeer, at: UInt64)] = [:]
    /// Addresses whose channel authenticated a peer not known to be a stranger, kept across
    /// closes (a peer's entry in `discovered` is not): the fair order's "linked before".
    var recentlyLinked = BLERecentAddresses<Bool>(capacity: 64)
    /// Addresses whose authenticated peer was a stranger, and until when (monotonic ns) we do
    /// not connect to them again (its channel is closed after its grace period; connecting
    /// again at once would only hand it another).
    var recentStrangers = BLERecentAddresses<UInt64>(capacity: 64)
    /// Peers a full table dropped for a newcomer: when one is heard again soon, its fallback
    /// clock and sightings come back with it, so that a flood of fresh addresses cannot keep
    /// restarting a real peer's 30 s fallback (or keep it at one sighting, first to go). Four
    /// tables' worth: a flood must bring 256 fresh addresses between two of its sightings.
    var droppedPeers = BLERecentAddresses<(unconnectedSince: UInt64?, sightings: Int, lastSeen: UInt64)>(capacity: 256)
    var timer: EventLoop.TimerID?
    var mgmtBuffer = [UInt8](repeating: 0, count: 2048)
    var readBuffer = [UInt8](repeating: 0, count: 65536)
    var refused = 0
    var closedCount = 0
    /// Outbound connects that failed and handed the connecting role to the peer.
    var handOvers = 0
    var recentCloses: [ClosedConnection] = []
    /// Why the last start failed, until the next start or stop.
    var unavailable: String?

    // Slots and idle channels (BLETransport+Connections.swift).
    /// The once-a-second sweep of channel deadlines and keepalives.
    var connectionTimer: EventLoop.TimerID?
    /// Channels closed to make room for a new one (their handshake had not finished, or
    /// their peer is a stranger).
    var evicted = 0
    /// Channels closed because their authenticated peer is not a contact (grace period over,
    /// or more strangers than `Options.maxStrangerChannels`).
    var strangersClosed = 0
    /// Tests only: the MTU (both ways) of channels whose socket is not Bluetooth (a
    /// socketpair standing in for an accepted channel), which have none to read.
    var nonBluetoothMTU: Int?

    // Start-up and discovery hardening (BLETransport+Start.swift, +Discovery.swift).
    /// The start in progress (its number), while it talks to the kernel outside the lock;
    /// `stop` clears it, and that start then undoes what it did.
    var starting: UInt64?
    var startAttempts: UInt64 = 0
    /// The PSM the listener is bound to (advertised in version 2).
    var listenPSM: UInt16 = 0
    /// A discovery run this transport started (and so stops at `stop`): not bluetoothd's.
    var discoveryOurs = false
    /// Monotonic ns of the last hand-over (a token drawn larger than a peer's after our
    /// connect to it failed): at most one per `Options.handOverInterval`.
    var lastHandOverAt: UInt64?
    var handOversRefused = 0
    var connectFailures = 0
    /// Adverts refused because the peer table was full of peers we have channels with.
    var peersRefused = 0
    var notConnectableIgnored = 0

    /// An outbound connect is in progress (the kernel makes one LE connection at a time).
    var isConnecting: Bool { connections.values.contains { $0.phase == .connecting } }
}
