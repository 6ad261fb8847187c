import YaOKSupport
import YaOKSystem
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKNode

/// The LAN transport ("WiFi"): TCP connections to Ya OK nodes on the same network (a home
/// or office LAN, a WiFi Direct group, a hotspot), found by UDP multicast beacons
/// (docs/PROTOCOL.md §7) or given as static `host:port` addresses.
///
/// Each TCP connection becomes one link (`Node.openLink`, the connector as initiator):
/// bytes in go through a `FrameDecoder`, each complete frame is one unit for the link;
/// units out are framed by a `FrameWriter`. The transport adds keepalive frames (empty
/// frames, every `keepaliveInterval`), closes connections that stay silent, and bounds
/// everything a peer can make it hold (connections, a partial frame and a write queue per
/// connection, discovered peers).
///
/// Threads: `start`, `stop` and `diagnostics` may be called from any thread. Sockets are
/// non-blocking and serviced on the node's event thread; the transport never blocks it.
/// One lock guards the transport's state; it is never held while the transport calls into
/// a link, so a link may call `send` from inside `receive`.
public final class LANTransport: Transport {
    public struct Options: Sendable {
        /// Multicast discovery. The defaults suit a real LAN.
        public struct Discovery: Sendable {
            /// Where beacons are sent: an IPv4 multicast group (joined on `interface`), or,
            /// for tests and special networks, a unicast address.
            public var group = "239.255.42.99"
            /// The UDP port beacons are sent to, and listened on.
            public var port: UInt16 = 47474
            /// The UDP port to listen on when it must differ from `port` (two nodes on one
            /// host with unicast beacons, as the loopback tests do); nil: `port`.
            public var receivePort: UInt16?
            /// The network interface ("wlan0", "p2p-wlan0-0") to join the group on and send
            /// beacons from; nil lets the kernel choose by its routing table.
            public var interface: String?
            /// Seconds between beacons (the first one goes out at once).
            public var beaconInterval: Double = 3
            /// Seconds after which the beacon's random token is drawn again.
            public var tokenLifetime: Double = 300

            public init() {}
        }

        /// The IPv4 address to accept connections on ("0.0.0.0": every interface).
        public var listenAddress = "0.0.0.0"
        /// The TCP port; 0 lets the kernel choose (see `listeningPort`).
        public var listenPort: UInt16 = 0
        /// nil turns discovery off (static peers only).
        public var discovery: Discovery? = Discovery()
        /// "host:port" addresses (IPv4 or a host name) to connect to and stay connected to.
        public var staticPeers: [String] = []
        // Slots (LANTransport+Connections.swift, `makeRoomLocked`; PROTOCOL.md §7). The policy
        // is the Bluetooth transport's (`SlotPolicy`): a new connection that finds no slot
        // takes that of the oldest inbound one whose handshake has not finished, else that of
        // the oldest with a stranger; failing both it is closed at once.
        /// The most connections at once, both directions.
        public var maxConnections = 256
        /// The most connections with one IPv4 address, both directions together (two nodes
        /// need one each way; a few nodes may share a host).
        public var maxConnectionsPerAddress = 8
        /// Slots of `maxConnections` inbound connections never take, so a flood of them cannot
        /// stop this node connecting to the peers it discovers or is given.
        public var reservedOutboundSlots = 16
        /// A connection whose authenticated peer is not one of the node's contacts is closed
        /// this many seconds after its handshake (not while the node cannot tell: never
        /// unlocked since it started). This version forwards nothing for others (§4.3), and
        /// anyone can complete the handshake with a self-made identity.
        public var strangerGracePeriod: Double = 30
        /// At most this many connections with strangers at once; the newest beyond are closed.
        public var maxStrangerConnections = 8
        /// An address and port whose peer turned out a stranger is not connected to again
        /// (from its beacons) for this many seconds.
        public var strangerBackoff: Double = 300
        /// Bytes queued for one peer beyond which it counts as not reading: dropped. Above
        /// what a node leaves unconfirmed on a link (512 KiB, PROTOCOL.md §6.1), so a peer
        /// that reads slowly is paced by receipts, never dropped for it; as on BLE.
        public var maxWriteQueueBytes = 1 << 20
        /// Seconds between keepalive frames on a connection with nothing else to send.
        public var keepaliveInterval: Double = 15
        /// A connection on which nothing at all arrives for this many seconds is closed.
        public var idleTimeout: Double = 60
        /// A connection on which fewer than `handshakeUnits` units (non-empty frames) have
        /// arrived this long after it opened is closed: its link's handshake has not
        /// finished. (The node has its own, shorter, handshake timeout; this one also
        /// catches a peer that sends keepalive frames and nothing else.)
        public var handshakeTimeout: Double = 30
        /// An outbound connect(2) that has not completed after this many seconds is abandoned.
        public var connectTimeout: Double = 10
        /// First delay before reconnecting to a static peer; doubles with each failure.
        public var reconnectDelay: Double = 1
        public var maxReconnectDelay: Double = 60
        /// The least time between two connection attempts to one discovered address.
        public var connectAttemptInterval: Double = 10
        /// At most this many discovered peers are remembered (when full, a new one replaces one
        /// of those heard least steadily: `peerToForgetLocked`).
        public var maxDiscoveredPeers = 64

        public init() {}
    }

    /// Link units on a stream are never fragmented: one unit is one frame.
    public static let linkMTU = Wire.maxPacketLength + 64

    /// Units each side has received once a link's handshake is complete (PROTOCOL.md §5.2):
    /// the responder m1 and m3, the initiator m2 and the keepalive the responder sends on
    /// completion.
    public static let handshakeUnits = 2

    public let name = "lan"
    public let displayName = "WiFi"
    public let options: Options

    let listenEndpoint: IPv4Endpoint
    let group: IPv4Endpoint?
    let tickInterval: Double
    let state = Locked(LANState())
    /// The IPv4 subnets of the interfaces that are up, loopback excepted (of the one named,
    /// if any): getifaddrs(3), or the tests' own (`LANTransport+Network`).
    let interfaces: @Sendable (_ interface: String?) -> [BeaconSource.Subnet]

    /// Checks the options; opens nothing until `start`.
    public convenience init(options: Options = Options()) throws {
        try self.init(options: options, interfaces: { BeaconSource.localSubnets(interface: $0) })
    }

    /// `init(options:)` reading the interfaces through `interfaces` (tests).
    init(options: Options, interfaces: @escaping @Sendable (_ interface: String?) -> [BeaconSource.Subnet]) throws {
        self.interfaces = interfaces
        guard let listen = IPv4Endpoint.parseAddress(options.listenAddress) else {
            throw YaOKError(.invalidArgument, "LAN listen address \"\(options.listenAddress)\" is not an IPv4 address")
        }
        try TransportLimits.checkSlots("LAN", maxConnections: options.maxConnections,
                                       maxPerAddress: options.maxConnectionsPerAddress,
                                       reservedOutboundSlots: options.reservedOutboundSlots,
                                       maxStrangers: options.maxStrangerConnections, maxDiscoveredPeers: options.maxDiscoveredPeers,
                                       maxWriteQueueBytes: options.maxWriteQueueBytes, unit: LANTransport.linkMTU)
        var intervals = [options.keepaliveInterval, options.idleTimeout, options.handshakeTimeout,
                         options.connectTimeout, options.reconnectDelay, options.maxReconnectDelay,
                         options.connectAttemptInterval, options.strangerGracePeriod, options.strangerBackoff]
        if let discovery = options.discovery {
            guard let address = IPv4Endpoint.parseAddress(discovery.group) else {
                throw YaOKError(.invalidArgument, "LAN discovery group \"\(discovery.group)\" is not an IPv4 address")
            }
            guard discovery.port != 0 else { throw YaOKError(.invalidArgument, "LAN discovery port must not be 0") }
            group = IPv4Endpoint(address: address, port: discovery.port)
            intervals += [discovery.beaconInterval, discovery.tokenLifetime]
        } else {
            group = nil
        }
        try TransportLimits.checkIntervals("LAN", intervals)
        self.options = options
        listenEndpoint = IPv4Endpoint(address: listen, port: options.listenPort)
        // Timers are checked on one periodic tick, fine enough for the shortest of them.
        tickInterval = min(max(intervals.min().map { $0 / 2 } ?? 1, 0.02), 1)
    }

    deinit { stop() }

    // MARK: - Transport

    /// Listens, joins the discovery group and starts connecting to static peers. Throws
    /// (opening nothing) when the port is in use, the interface does not exist, the group
    /// cannot be joined, or a static peer's host cannot be resolved.
    public func start(on node: Node) throws {
        try start(opener: node)
    }

    /// `start(on:)` with any `LinkOpener` (the tests' fake).
    package func start(opener: any LinkOpener) throws {
        // Resolving may block: do it here, on the caller's thread, never on the loop.
        let peers = try options.staticPeers.map { ($0, try IPv4Endpoint.resolve($0)) }
        let loop = opener.eventLoop
        try state.withLock { s in
            guard !s.running else { throw YaOKError(.invalidArgument, "The LAN transport is already running") }
            var fresh = LANState()
            let listener = try Socket.listen(on: listenEndpoint)
            var udp: Int32 = -1
            do {
                guard let bound = Socket.localEndpoint(listener) else {
                    throw YaOKError(.internal, "Cannot read the LAN listener's address (getsockname)")
                }
                fresh.listening = bound
                if let discovery = options.discovery, let group {
                    udp = try Socket.openDiscovery(group: group, port: discovery.receivePort ?? discovery.port,
                                                   bindHost: listenEndpoint.address, interface: discovery.interface)
                    fresh.discoveryBound = Socket.localEndpoint(udp)
                    fresh.beaconTarget = group
                }
                try loop.register(fd: listener, for: .readable) { [weak self] _ in self?.acceptReady() }
                if udp >= 0 {
                    try loop.register(fd: udp, for: .readable) { [weak self] _ in self?.datagramsReady() }
                }
            } catch {
                loop.unregister(fd: listener)
                Socket.close(listener)
                if udp >= 0 {
                    loop.unregister(fd: udp)
                    Socket.close(udp)
                }
                throw error
            }
            let now = EventLoop.monotonicNanoseconds()
            fresh.running = true
            fresh.opener = opener
            fresh.loop = loop
            fresh.listener = listener
            fresh.udp = udp
            fresh.token = Sodium.randomBytes(Beacon.tokenLength)
            fresh.tokenDrawnAt = now
            fresh.nextBeaconAt = now
            fresh.statics = peers.map { StaticPeer(text: $0.0, endpoint: $0.1, nextAttempt: now) }
            fresh.run = s.run &+ 1
            _ = refreshNetworkLocked(&fresh, force: true)
            s = fresh
            // The first tick sends the first beacon and connects to static peers, on the loop.
            let run = s.run
            s.timer = loop.schedule(after: 0) { [weak self] in self?.tick(run: run) }
        }
    }

    /// Closes every connection (telling each link), the listener and the discovery socket,
    /// each unregistered from the loop before it is closed. Idempotent.
    public func stop() {
        let links = state.withLock { s -> [any TransportLink] in
            guard s.running else { return [] }
            s.running = false
            if let timer = s.timer { s.loop?.cancel(timer) }
            s.timer = nil
            let links = closeAllLocked(&s, "the LAN transport stopped")
            for fd in [s.listener, s.udp] where fd >= 0 {
                s.loop?.unregister(fd: fd)
                Socket.close(fd)
            }
            s.listener = -1
            s.udp = -1
            s.opener = nil
            s.loop = nil
            s.discovered.removeAll()
            return links
        }
        for link in links { link.close(reason: "the LAN transport stopped") }
    }

    /// The TCP port connections are accepted on, while running.
    public var listeningPort: UInt16? {
        state.withLock { s in s.running ? s.listening?.port : nil }
    }

    /// The UDP port beacons are received on, while running with discovery.
    public var discoveryPort: UInt16? {
        state.withLock { s in s.running ? s.discoveryBound?.port : nil }
    }

    /// Connections open or being opened right now.
    public var connectionCount: Int {
        state.withLock { $0.connections.count }
    }

    /// Diagnostics (no identities: addresses, ports, times, counts):
    ///
    ///     {"name":"lan","running":true,
    ///      "listening":{"address":"0.0.0.0","port":40123} | null,
    ///      "discovery":{"enabled":true,"group":"239.255.42.99","port":47474,
    ///                   "interface":"wlan0" | null,"beacons_sent":12,"error":null | "…"},
    ///      "peers":[{"address":"192.168.1.7:40999","first_seen_ms":…,"last_seen_ms":…}],
    ///      "static_peers":[{"address":"10.0.0.2:47475","connected":true,"failures":0,
    ///                       "last_error":null | "…"}],
    ///      "connections":[{"address":"192.168.1.7:40999","direction":"outbound",
    ///                      "state":"connecting" | "open","since_ms":…,"units_received":3,
    ///                      "bytes_in":…,"bytes_out":…,"queued_bytes":0,
    ///                      "peer":"unknown" | "contact" | "stranger"}],
    ///      "max_connections":256,"refused_connections":0,"evicted_connections":0,
    ///      "strangers_closed":0,"dials_limited":0,"closed_connections":4,
    ///      "recent_closes":[{"address":"…","direction":"inbound","reason":"…","at_ms":…}]}
    ///
    /// `address` of an inbound connection is the peer's source address (its port is
    /// ephemeral); of an outbound one, where we connected. Times are wall-clock ms.
    public func diagnostics() -> JSON {
        state.withLock { s in
            let discovery: JSON
            if let d = options.discovery {
                discovery = .object([
                    ("enabled", .bool(true)), ("group", .string(d.group)),
                    ("port", .int(Int64(d.port))),
                    ("interface", d.interface.map { .string($0) } ?? .null),
                    ("beacons_sent", .int(Int64(s.beaconsSent))),
                    ("error", s.beaconError.map { .string($0) } ?? .null),
                ])
            } else {
                discovery = .object([("enabled", .bool(false))])
            }
            let peers = s.discovered.sorted { $0.value.firstSeenMs < $1.value.firstSeenMs }.map { endpoint, peer in
                JSON.object([("address", .string(endpoint.description)),
                             ("first_seen_ms", .int(peer.firstSeenMs)), ("last_seen_ms", .int(peer.lastSeenMs))])
            }
            let statics = s.statics.map { p in
                JSON.object([("address", .string(p.text)), ("connected", .bool(p.connection != nil)),
                             ("failures", .int(Int64(p.failures))),
                             ("last_error", p.lastError.map { .string($0) } ?? .null)])
            }
            let connections = s.connections.values.sorted { $0.id < $1.id }.map { c in
                JSON.object([
                    ("address", .string(c.direction == .inbound ? c.remote.host : c.remote.description)),
                    ("direction", .string(c.direction.rawValue)), ("state", .string(c.phase.rawValue)),
                    ("since_ms", .int(c.sinceMs)), ("units_received", .int(Int64(c.unitsReceived))),
                    ("bytes_in", .int(Int64(c.bytesIn))), ("bytes_out", .int(Int64(c.bytesOut))),
                    ("queued_bytes", .int(Int64(c.writer.pendingByteCount))),
                    ("peer", .string(!c.authenticated ? "unknown" : c.contact.map { $0 ? "contact" : "stranger" } ?? "unknown")),
                ])
            }
            let closes = s.recentCloses.map { c in
                JSON.object([("address", .string(c.address)), ("direction", .string(c.direction.rawValue)),
                             ("reason", .string(c.reason)), ("at_ms", .int(c.atMs))])
            }
            let listening: JSON = s.running ? (s.listening.map {
                .object([("address", .string($0.host)), ("port", .int(Int64($0.port)))])
            } ?? .null) : .null
            return .object([
                ("name", .string(name)), ("running", .bool(s.running)),
                ("listening", listening), ("discovery", discovery),
                ("peers", .array(peers)), ("static_peers", .array(statics)),
                ("connections", .array(connections)),
                ("max_connections", .int(Int64(options.maxConnections))),
                ("refused_connections", .int(Int64(s.refused))),
                ("evicted_connections", .int(Int64(s.evicted))),
                ("strangers_closed", .int(Int64(s.strangersClosed))),
                ("dials_limited", .int(Int64(s.dialsLimited))),
                ("closed_connections", .int(Int64(s.closedCount))),
                ("recent_closes", .array(closes)),
            ])
        }
    }

    // MARK: - Helpers shared by the LANTransport+*.swift files

    static func nanoseconds(_ seconds: Double) -> UInt64 { UInt64(seconds * 1e9) }
}
