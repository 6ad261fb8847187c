import YaOKSupport
import YaOKLoop
import YaOKWire

/// One TCP connection: the shared fields (`SocketConnection`), its endpoint and its
/// framing. Touched only under the transport's lock.
final class LANConnection: SocketConnection {
    let remote: IPv4Endpoint
    /// One partial frame at most (≤ the link MTU): the decoder checks each length prefix
    /// before it buffers anything of the frame.
    var decoder: FrameDecoder
    /// Capped by `Options.maxWriteQueueBytes`: beyond it the peer is not reading and the
    /// connection is dropped.
    var writer: FrameWriter
    var lastSent: UInt64

    init(id: UInt64, fd: Int32, remote: IPv4Endpoint, direction: Direction, phase: Phase,
         mtu: Int, now: UInt64, nowMs: Int64) throws {
        self.remote = remote
        decoder = try FrameDecoder(maxLength: mtu)
        writer = FrameWriter(maxLength: mtu)
        lastSent = now
        super.init(id: id, fd: fd, direction: direction, phase: phase, now: now, nowMs: nowMs)
    }

    /// An inbound peer's port is ephemeral: its host only.
    override var closeAddress: String { direction == .inbound ? remote.host : remote.description }
}

/// A peer heard through a beacon. No identity: an address, a port and two times.
struct DiscoveredPeer {
    var token: [UInt8]
    let firstSeenMs: Int64
    var lastSeenMs: Int64
    var lastSeen: UInt64
    /// Monotonic ns since when we have heard it without being connected to it, if so.
    var unconnectedSince: UInt64?
    /// Monotonic ns of our last connection attempt (the per-address rate limit).
    var lastAttempt: UInt64?
    /// Beacons heard in the current run: one after another, none more than two of our beacon
    /// intervals after the last (monotonic ns since `runStart`). A peer that has beaconed
    /// steadily is preferred for the dials a flood of one-off beacons competes for.
    var beaconsInRun = 1
    var runStart: UInt64 = 0
    /// Its beacon asked for a dial that the overall budget had no room for yet: one is chosen
    /// at random among these when the budget has room again.
    var pending = false
}

/// A peer from `Options.staticPeers`: always connected to, reconnected with backoff.
struct StaticPeer {
    let text: String
    let endpoint: IPv4Endpoint
    var connection: UInt64?
    var nextAttempt: UInt64
    var failures = 0
    var lastError: String?
}

/// Everything the transport's lock protects.
struct LANState: ConnectionTableState {
    var running = false
    /// Counts starts, so that work scheduled by an earlier run can tell.
    var run: UInt64 = 0
    /// Weak: the node owns its transports, so a strong reference back would be a cycle that
    /// keeps a node nobody closed alive; and the last reference must never be dropped under
    /// the transport's lock (a node's deinit stops its loop, which waits for a handler that
    /// may be waiting for this lock).
    weak var opener: (any LinkOpener)?
    var loop: EventLoop?
    var listener: Int32 = -1
    var listening: IPv4Endpoint?
    var listenerPaused = false
    var udp: Int32 = -1
    var discoveryBound: IPv4Endpoint?
    var beaconTarget: IPv4Endpoint?
    var token: [UInt8] = []
    var previousToken: [UInt8]?
    var tokenDrawnAt: UInt64 = 0
    var nextBeaconAt: UInt64 = 0
    var beaconsSent = 0
    /// Monotonic ns of the last beacon sent in answer to a new peer's (0: none yet).
    var lastAnswer: UInt64 = 0
    /// Connection attempts to discovered peers in the current second (all addresses
    /// together), and when that second began: beacons naming ever new addresses cannot
    /// turn the node into a SYN cannon.
    var attemptsThisSecond = 0
    var attemptSecondStart: UInt64 = 0
    var beaconError: String?
    var connections: [UInt64: LANConnection] = [:]
    var nextID: UInt64 = 1
    var discovered: [IPv4Endpoint: DiscoveredPeer] = [:]
    var statics: [StaticPeer] = []
    var timer: EventLoop.TimerID?
    /// Shared by every connection's reads (the loop runs one handler at a time).
    var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    var datagram = [UInt8](repeating: 0, count: 64)
    /// Connections accepted and closed at once because no slot could be made for them.
    var refused = 0
    /// Connections closed to make room for a new one (unfinished, or with a stranger).
    var evicted = 0
    /// Connections closed because their peer is a stranger (grace period over, or too many).
    var strangersClosed = 0
    /// Dials from beacons not made because of the per-source or overall rate limit.
    var dialsLimited = 0
    /// Endpoints whose peer turned out a stranger, and until when (monotonic ns) their
    /// beacons do not make us connect (at most `maxDiscoveredPeers`, the soonest to end go).
    var recentStrangers: [IPv4Endpoint: UInt64] = [:]
    /// Dials made from beacons per source address in the current window, and when that
    /// window began (monotonic ns): a spoofed beacon names any port, so the limit per
    /// address and port alone would let one source send us to every port of a host.
    var dialsBySource: [UInt32: Int] = [:]
    var dialWindowStart: UInt64 = 0
    /// Endpoints (address and listening port) we connected to and found a contact, and when
    /// (monotonic ns; at most `maxDiscoveredPeers`, the oldest go): their beacons are dialed
    /// outside the overall and per-source budgets, which a flood of spoofed beacons can use up.
    var contactEndpoints: [IPv4Endpoint: UInt64] = [:]
    /// The subnets of our interfaces a beacon's source must be on (`BeaconSource`), and when
    /// they were read (monotonic ns; read again at most once a second, when a source is not on them).
    var subnets: [BeaconSource.Subnet] = []
    var subnetsReadAt: UInt64 = 0
    /// Why the transport has no network to be on, while it has none (`LANTransport+Network`),
    /// and when the interfaces were last read for it (monotonic ns).
    var noNetwork: String?
    var networkReadAt: UInt64 = 0
    /// Beacons ignored for their source address (not on a subnet of ours, or not a unicast one).
    var beaconsIgnored = 0
    var closedCount = 0
    var recentCloses: [ClosedConnection] = []
}
