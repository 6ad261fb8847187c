import Glibc
import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKNode

/// The Bluetooth LE transport ("Bluetooth"), on Linux's own Bluetooth stack (BlueZ in the
/// kernel), for people with no network at all (docs/PROTOCOL.md §9):
///
/// - **Links** are L2CAP LE credit-based channels (`SOCK_SEQPACKET`, `BTPROTO_L2CAP`, an LE
///   address, PSM 0x0081 by default, advertised). One SDU is one link unit; the send MTU the peer granted is the
///   link's MTU, so the node fragments larger packets (§4.7). The connector is the initiator.
/// - **Discovery** uses the kernel's management interface (mgmt): an advertising instance
///   (connectable, the Ya OK service UUID, a random token that changes every few minutes and
///   the PSM) and LE discovery; the side with the smaller token connects, as on the LAN.
///   Peers are tried in a fair order with a backoff per address (fake advertisers cannot
///   starve real ones), and `stop` gives the adapter back as it was found.
/// - **Absent Bluetooth** (no kernel support, no adapter, adapter off, no permission): `start`
///   throws "Bluetooth unavailable: <reason> (<what to do>)" and opens nothing.
/// - **While running**, an adapter that is powered off (or removed) closes the links and
///   waits; when it is back, advertising and discovery start again by themselves.
///
/// Threads: as `LANTransport`: `start`, `stop` and `diagnostics` from any thread, sockets
/// serviced on the node's event thread, one lock never held while calling into a link nor
/// while waiting for the kernel's answer to a mgmt command.
public final class BLETransport: Transport {
    public struct Options: Sendable {
        /// "hci0", "hci1", …; nil: the first adapter that is powered and supports LE.
        public var adapter: String?
        /// The L2CAP PSM links are accepted on (LE dynamic range 0x0080–0x00FF); advertised
        /// (PROTOCOL.md §9.1, version 2), so peers need not assume it.
        public var psm: UInt16 = BLETransport.defaultPSM
        /// The SDU size this side accepts (BT_RCVMTU); the peer's is our send MTU. The default,
        /// the largest there is, holds the largest link packet, so that no packet is fragmented
        /// (§4.7): one SDU and one recv(2) per packet, queued SDUs sent together by sendmmsg(2) (the kernel still segments
        /// SDUs into PDUs of the negotiated MPS). Linux grants the sender credits in proportion
        /// to it (MTU / MPS + 1 PDUs), so a large one keeps several packets in flight while
        /// this side is busy with the last one.
        public var receiveMTU = 65535
        /// Seconds after which the advertised token is drawn again.
        public var tokenLifetime: Double = 300
        /// Beyond this many channels, new ones are accepted and closed at once (or take the
        /// slot of one whose handshake has not finished: see `maxChannelsPerAddress` below).
        public var maxConnections = 8
        /// The most bytes queued for one channel (a bound on memory): an SDU that would take
        /// the queue past it is refused and the channel closed. The node keeps at most 128 KiB
        /// of packets unconfirmed on a link (PROTOCOL.md §6.1), plus receipts and keepalives,
        /// so a healthy channel stays far below this.
        public var maxWriteQueueBytes = 1 << 20
        /// A channel whose queue has not moved (the kernel took no SDU) for this many seconds
        /// counts as a peer that is not reading, and is closed. (A byte cap alone closed healthy
        /// channels: 50 queued 10 KB messages are 525 KB handed over in one go.)
        public var writeStallTimeout: Double = 30
        /// An outbound connect that has not completed after this many seconds is abandoned.
        public var connectTimeout: Double = 10
        /// The same for an address no channel has authenticated a contact (or unknown peer)
        /// at lately (`BLEState.recentlyLinked`): a fake advertiser from a fresh random
        /// address holds the one outbound connect this long at most. An LE connect to a
        /// device that is advertising takes about one advertising interval (1.28 s by default).
        public var newcomerConnectTimeout: Double = 5
        /// A channel whose link has not authenticated the peer (its handshake, PROTOCOL.md
        /// §5.2, has not completed) this long after the channel opened is closed. The node
        /// itself gives a handshake 10 s (`Node.handshakeTimeoutMs`): waiting longer only holds the slot.
        public var handshakeTimeout: Double = 10
        /// A channel whose authenticated peer is not one of the node's contacts is closed this
        /// many seconds after it authenticated (unless the node cannot tell: locked). This
        /// version forwards nothing for others (PROTOCOL.md §4.3), so a stranger has nothing
        /// to give; without it, anyone with a self-made identity could hold slots for good.
        public var strangerGracePeriod: Double = 30
        /// At most this many channels with strangers (authenticated, not contacts) at once;
        /// the newest beyond it are closed.
        public var maxStrangerChannels = 2

        // Channel slots and idle channels (BLETransport+Connections.swift: `makeRoomLocked`,
        // `sweepConnections`).
        /// Channels with one remote address, in both directions together. Two nodes need one
        /// each way at most; without a cap one device could open every slot over its one LE
        /// connection and keep renewing them.
        public var maxChannelsPerAddress = 2
        /// Slots of `maxConnections` that inbound channels never take, so a flood of them
        /// cannot stop this node connecting to the peers it discovers.
        public var reservedOutboundSlots = 1
        /// A channel on which no SDU has arrived for this many seconds is closed. The peer's
        /// node sends a keepalive on a link idle for `Node.linkKeepaliveMs` (PROTOCOL.md
        /// §5.4); this must be well above it.
        public var idleTimeout: Double = 90
        /// The least time between two connection attempts to one address; after each failed
        /// connect to it in a row the wait doubles (5, 10, 20 … s), up to `maxConnectBackoff`.
        public var connectAttemptInterval: Double = 5
        /// The longest wait before connecting again to an address whose connects keep failing
        /// (an advertiser that does not accept: PROTOCOL.md §9.2).
        public var maxConnectBackoff: Double = 300
        /// The least time between two hand-overs (a failed connect answered with a token larger
        /// than the peer's): fake advertisers cannot make the token change at every failure.
        public var handOverInterval: Double = 60
        /// The side with the larger token connects itself after hearing a peer for this long
        /// without a connection (the smaller side cannot reach it).
        public var fallbackAfter: Double = 30
        /// A discovery run is ended and started again after this many seconds (the kernel's
        /// own run is about 10 s). Each run reports a peer once (the controller's duplicate
        /// filter), and a report that arrives while the run is still starting is dropped by
        /// the kernel: with a controller that reports every advertiser at once when scanning
        /// starts (BlueZ's virtual controllers), a peer missed that way stayed unheard for
        /// the whole run. Short runs give it another chance soon.
        public var discoveryRunLength: Double = 3
        /// A peer whose token makes it the connector but which has not connected this many
        /// seconds after we heard it may not have heard us: our advertising is set up again
        /// (and once, this long after a start or power-on at which we heard nobody). See
        /// BLETransport+Reannounce.swift; PROTOCOL.md §9.2.
        public var reannounceAfter: Double = 2
        /// The least time between two such re-announcements.
        public var reannounceInterval: Double = 2
        /// After a channel with a peer closes, its advertisement with the token it had
        /// meanwhile is ignored for this many seconds (a powered-off controller may go on
        /// advertising it: see `closeLocked`); a fresh token is heard at once.
        public var staleTokenHold: Double = 30
        /// A peer not heard for this long is forgotten.
        public var forgetAfter: Double = 60
        public var maxDiscoveredPeers = 64
        /// The kernel socket send buffer of each channel (large SDUs need room: PROTOCOL.md §9).
        public var sendBuffer = 1 << 20

        public init() {}
    }

    /// The PSM a Linux node listens on by default, and the one a version-1 advertisement
    /// implies (version 2 carries the listener's own: phones get a dynamic one).
    public static let defaultPSM: UInt16 = 0x0081

    public let name = "ble"
    public let displayName = "Bluetooth"
    public let options: Options
    let requestedIndex: UInt16?
    let state = Locked(BLEState())
    /// Held through a whole `start` and a whole `stop` (never the state lock: start waits for
    /// the kernel while holding it): a `stop` returns only once an abandoned start has given
    /// the adapter back, so a start right after finds it as it was (no "PSM in use", no old
    /// clean-up turning the advertising setting on under the new run).
    let lifecycle = Locked(())

    /// The kernel interfaces start-up opens (the tests' fakes in tests).
    let system: BLESystem

    /// Checks the options; touches no Bluetooth until `start`.
    public convenience init(options: Options = Options()) throws {
        try self.init(options: options, system: .kernel)
    }

    init(options: Options, system: BLESystem) throws {
        self.system = system
        if let adapter = options.adapter {
            guard let index = BLETransport.adapterIndex(adapter) else {
                throw YaOKError(.invalidArgument, "Bluetooth adapter \"\(adapter)\" is not a name like hci0")
            }
            requestedIndex = index
        } else {
            requestedIndex = nil
        }
        guard (0x0080...0x00ff).contains(options.psm) else {
            throw YaOKError(.invalidArgument, "The BLE PSM must be in the LE dynamic range 0x0080-0x00FF")
        }
        guard options.receiveMTU >= 23, options.receiveMTU <= 65535 else {
            throw YaOKError(.invalidArgument, "The BLE receive MTU must be 23 to 65535 bytes")
        }
        try TransportLimits.checkSlots("BLE", maxConnections: options.maxConnections, maxPerAddress: options.maxChannelsPerAddress,
                                       reservedOutboundSlots: options.reservedOutboundSlots,
                                       maxStrangers: options.maxStrangerChannels, maxDiscoveredPeers: options.maxDiscoveredPeers,
                                       maxWriteQueueBytes: options.maxWriteQueueBytes, unit: Wire.maxPacketLength + 64)
        let intervals = [options.tokenLifetime, options.connectTimeout, options.newcomerConnectTimeout,
                         options.strangerGracePeriod, options.handshakeTimeout, options.writeStallTimeout, options.discoveryRunLength, options.reannounceAfter, options.reannounceInterval, options.staleTokenHold,
                         options.connectAttemptInterval, options.fallbackAfter, options.forgetAfter,
                         options.idleTimeout, options.maxConnectBackoff, options.handOverInterval]
        try TransportLimits.checkIntervals("BLE", intervals)
        guard options.idleTimeout * 1000 > Double(Node.linkKeepaliveMs) else {
            throw YaOKError(.invalidArgument, "The BLE idle timeout must be longer than the links' keepalive interval (\(Node.linkKeepaliveMs / 1000) s)")
        }
        self.options = options
    }

    deinit { stop() }

    /// "hci3" → 3.
    static func adapterIndex(_ name: String) -> UInt16? {
        guard name.hasPrefix("hci"), name.count > 3, name.count <= 8 else { return nil }
        return UInt16(name.dropFirst(3))
    }

    // MARK: - Transport

    /// Finds the adapter, listens on the PSM, starts advertising and discovery. Throws
    /// "Bluetooth unavailable: …" (opening nothing) when Bluetooth cannot be used.
    public func start(on node: Node) throws {
        try start(opener: node)
    }

    /// One line for people: "Bluetooth: Disabled", "Bluetooth unavailable: …",
    /// "Bluetooth: hci0 powered off, waiting", "Bluetooth: on hci0, 1 link".
    public var status: String {
        state.withLock { statusLocked($0) }
    }

    func statusLocked(_ s: BLEState) -> String {
        if let unavailable = s.unavailable { return unavailable }
        if s.starting != nil { return "Bluetooth: starting" }
        guard s.running, let adapter = s.adapter else { return "Bluetooth: Disabled" }
        if s.adapterGone { return "Bluetooth: \(adapter.name) removed, waiting for it" }
        if !adapter.powered { return "Bluetooth: \(adapter.name) powered off, waiting for it" }
        let open = s.connections.values.filter { $0.phase == .open }.count
        return "Bluetooth: on \(adapter.name), \(open) \(open == 1 ? "link" : "links")"
    }

    /// Disconnected (radio off) while the adapter is off or removed; connecting while it is
    /// powered but not yet both advertising and scanning (a start, or a power-on, until the
    /// kernel says a discovery run began); connected after. Reported to the node after each
    /// batch of mgmt events.
    public var connection: TransportConnection? { state.withLock { connectionLocked($0) } }

    func connectionLocked(_ s: BLEState) -> TransportConnection? {
        guard s.running, s.unavailable == nil, let adapter = s.adapter else { return nil }
        if s.adapterGone || !adapter.powered {
            return TransportConnection(state: .disconnected, reason: .radioOff, detail: statusLocked(s))
        }
        guard s.advertising, s.scanStarted else {
            let waiting = [s.advertising ? nil : "advertising", s.scanStarted ? nil : "scanning"].compactMap { $0 }
            // What the kernel refused meanwhile (discovery is asked again in 2 s, advertising
            // with the next token), so that an app showing "connecting" for long can say why.
            let refused = [s.advertising ? nil : s.advertisingError, s.scanStarted ? nil : s.discoveryError].compactMap { $0 }
            return TransportConnection(state: .connecting,
                                       detail: "Bluetooth: \(adapter.name) starting (waiting for \(waiting.joined(separator: " and ")))"
                                           + (refused.isEmpty ? "" : ": " + refused.joined(separator: "; ")))
        }
        return .connected
    }

    /// Tells the node the connection as it is now (it emits an event only on a change). The
    /// mgmt thread and stop can report at once: the sequence, taken with the reading under the
    /// lock, lets the node drop a reading that arrives after a newer one (as the relay does).
    func publishConnection() {
        let (opener, connection, sequence) = state.withLock { ($0.opener, connectionLocked($0), TransportConnection.nextSequence()) }
        guard let node = opener as? Node, let connection else { return }
        node.reportConnection(name, connection, sequence: sequence)
    }

    /// Channels open or being opened right now.
    public var connectionCount: Int { state.withLock { $0.connections.count } }

    /// The adapter in use ("hci0"), while running.
    public var adapterName: String? { state.withLock { $0.running ? $0.adapter?.name : nil } }

    /// ms from start until the first Ya OK advertisement was heard (nil: none yet).
    public var firstPeerAfterMs: Int64? { state.withLock { $0.firstPeerAfterMs } }

    /// Diagnostics (no identities: the adapter, peers' Bluetooth addresses, times, counts):
    ///
    ///     {"name":"ble","running":true,"status":"Bluetooth: on hci0, 1 link",
    ///      "advisories":["Bluetooth: advertising with hci0's fixed address …"],
    ///      "adapter":{"name":"hci0","address":"00:AA:01:00:00:00","address_type":"public",
    ///                 "powered":true,"present":true} | null,
    ///      "psm":129,"receive_mtu":4096,
    ///      "advertising":{"active":true,"instance":1,"tokens_drawn":1,"error":null,
    ///                     "advertising_setting_cleared":false,"privacy":false,"reannounced":0},
    ///      "discovery":{"active":true,"runs":3,"adverts_heard":2,"stale_adverts_ignored":0,
    ///                   "not_connectable_ignored":0,"peers_refused_table_full":0,
    ///                   "first_peer_after_ms":812,"error":null},
    ///      "peers":[{"address":"00:AA:01:01:00:01","address_type":"public","rssi":-60,"psm":129,
    ///                "first_seen_ms":…,"last_seen_ms":…,"linked":true,"connect_failures":0}],
    ///      "connections":[{"address":"…","direction":"outbound","state":"open","since_ms":…,
    ///                      "send_mtu":4096,"receive_mtu":4096,"units_received":3,
    ///                      "bytes_in":…,"bytes_out":…,"queued_bytes":0,"authenticated":true}],
    ///      "max_connections":8,"refused_connections":0,"evicted_connections":0,"closed_connections":1,
    ///      "connects_handed_over":0,"hand_overs_refused":0,"connect_failures":0,
    ///      "recent_closes":[{"address":"…","direction":"inbound","reason":"…","at_ms":…}]}
    public func diagnostics() -> JSON {
        state.withLock { s in
            let adapter: JSON = s.adapter.map { a in
                .object([("name", .string(a.name)), ("address", .string(a.address.text)),
                         ("address_type", .string(a.address.kind.name)), ("powered", .bool(a.powered)),
                         ("present", .bool(!s.adapterGone))])
            } ?? .null
            let peers = s.discovered.sorted { $0.value.firstSeenMs < $1.value.firstSeenMs }.map { address, p in
                JSON.object([("address", .string(address.text)), ("address_type", .string(address.kind.name)),
                             ("rssi", .int(Int64(p.rssi))), ("psm", .int(Int64(p.psm))),
                             ("first_seen_ms", .int(p.firstSeenMs)), ("last_seen_ms", .int(p.lastSeenMs)),
                             ("linked", .bool(p.linked)), ("connect_failures", .int(Int64(p.failures)))])
            }
            let connections = s.connections.values.sorted { $0.id < $1.id }.map { c in
                JSON.object([("address", .string(c.remote.text)), ("direction", .string(c.direction.rawValue)),
                             ("state", .string(c.phase.rawValue)), ("since_ms", .int(c.sinceMs)),
                             ("send_mtu", .int(Int64(c.sendMTU))), ("receive_mtu", .int(Int64(c.receiveMTU))),
                             ("units_received", .int(Int64(c.unitsReceived))),
                             ("bytes_in", .int(Int64(c.bytesIn))), ("bytes_out", .int(Int64(c.bytesOut))),
                             ("queued_bytes", .int(Int64(c.queuedBytes))),
                             ("authenticated", .bool(c.authenticated))])
            }
            let closes = s.recentCloses.map { c in
                JSON.object([("address", .string(c.address)), ("direction", .string(c.direction.rawValue)),
                             ("reason", .string(c.reason)), ("at_ms", .int(c.atMs))])
            }
            return .object([
                ("name", .string(name)), ("running", .bool(s.running)), ("status", .string(statusLocked(s))),
                ("advisories", .array(advisoriesLocked(s).map { .string($0) })),
                ("adapter", s.running ? adapter : .null),
                ("psm", .int(Int64(s.listenPSM != 0 ? s.listenPSM : options.psm))), ("receive_mtu", .int(Int64(options.receiveMTU))),
                ("advertising", .object([
                    ("active", .bool(s.advertising)), ("instance", s.adapter.map { .int(Int64($0.instance)) } ?? .null),
                    ("tokens_drawn", .int(Int64(s.tokensDrawn))), ("error", s.advertisingError.map { .string($0) } ?? .null),
                    ("advertising_setting_cleared", .bool(s.advertisingSettingCleared)),
                    ("privacy", s.adapter.map { .bool($0.privacy) } ?? .null),
                    ("reannounced", .int(Int64(s.reannounces))),
                ])),
                ("discovery", .object([
                    ("active", .bool(s.discovering)), ("runs", .int(Int64(s.discoveryRuns))),
                    ("restarted_runs", .int(Int64(s.discoveryRestarts))),
                    ("adverts_heard", .int(Int64(s.advertsHeard))),
                    ("stale_adverts_ignored", .int(Int64(s.staleAdvertsIgnored))),
                    ("not_connectable_ignored", .int(Int64(s.notConnectableIgnored))),
                    ("peers_refused_table_full", .int(Int64(s.peersRefused))),
                    ("first_peer_after_ms", s.firstPeerAfterMs.map { .int($0) } ?? .null),
                    ("error", s.discoveryError.map { .string($0) } ?? .null),
                ])),
                ("peers", .array(peers)), ("connections", .array(connections)),
                ("max_connections", .int(Int64(options.maxConnections))),
                ("refused_connections", .int(Int64(s.refused))),
                ("evicted_connections", .int(Int64(s.evicted))),
                ("closed_connections", .int(Int64(s.closedCount))),
                ("connects_handed_over", .int(Int64(s.handOvers))),
                ("hand_overs_refused", .int(Int64(s.handOversRefused))),
                ("connect_failures", .int(Int64(s.connectFailures))),
                ("recent_closes", .array(closes)),
            ])
        }
    }

    static func nanoseconds(_ seconds: Double) -> UInt64 { UInt64(seconds * 1e9) }
}
