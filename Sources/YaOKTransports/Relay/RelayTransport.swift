import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKNode
import YaOKTLS

/// The relay client (docs/PROTOCOL.md §8): one TLS 1.3 connection to a `yaok-relay`,
/// checked against a pin or a CA file, logged in with this node's relay-only pseudonym.
/// While the session is up it is the node's `Carrier`: packets for contacts with no
/// direct link are posted to their mailboxes, and ours are fetched and deleted once taken.
/// A relay that is down is retried with exponential backoff and jitter; messages wait in
/// the outbox meanwhile. A lock ends the session; an unlock starts a new one. A node with
/// no contact logs in once and then holds no session ("Idle: no contacts yet") until the
/// node reports a contact (`contactsChanged`).
///
/// Threads: `start`, `stop` and `diagnostics` from any thread; all I/O on the node's loop.
public final class RelayTransport: Transport, @unchecked Sendable {
    public struct Options: Sendable {
        /// TCP connect, TLS and login together.
        public var connectTimeout: Double = 10
        /// A PING goes out after this long without sending anything.
        public var pingAfter: Double = 45
        /// The connection is dropped after this long without hearing from the relay.
        public var idleTimeout: Double = 120
        /// Backoff between attempts: doubles from `minBackoff` to `maxBackoff`, with jitter.
        public var minBackoff: Double = 1
        public var maxBackoff: Double = 60
        /// Bytes waiting to be written at most; past it the relay is not reading and the
        /// connection is dropped (what was in flight is posted again next time).
        public var maxWriteQueue = 8 << 20

        public init() {}
    }

    public let name = "relay"
    public let displayName = "Relay"
    public let address: RelayAddress
    let context: TLSContext
    let options: Options
    let state = Locked(RelayState())

    /// `pin`: the SHA-256 of the relay's public key (32 bytes, as `yaok-relay` prints it), or
    /// `caFile`: PEM CA certificates; exactly one. `invalidArgument` otherwise.
    public init(address: RelayAddress, pin: [UInt8]?, caFile: String?, options: Options = Options()) throws {
        guard (pin == nil) != (caFile == nil) else {
            throw YaOKError(.invalidArgument, "Give the relay's pin or a CA file (exactly one)")
        }
        if let pin, pin.count != 32 { throw YaOKError(.invalidArgument, "A relay pin is 64 hex digits (SHA-256)") }
        self.address = address
        self.options = options
        context = try TLSContext.client(pin: pin, caFile: caFile)
    }

    public func start(on node: Node) throws {
        let loop = node.eventLoop
        state.withLock { s in
            s.node = node
            s.loop = loop
            s.running = true
            s.generation &+= 1
            s.failures = 0
            s.phase = .connecting
        }
        loop.post { [weak self] in self?.connect() }
    }

    public var reachesInternet: Bool { true }

    /// Connected, connecting, or disconnected with the reason and next retry: reported to
    /// the node on every change (`publishConnection`).
    public var connection: TransportConnection? { state.withLock { $0.connection } }

    /// Tells the node the connection as it is now (the node emits an event if it changed).
    /// Called after every change of phase, without the lock, from the relay's loop and from
    /// other threads (stop, unlock): the sequence, taken with the reading, lets the node drop
    /// a reading that arrives after a newer one.
    func publishConnection() {
        let (node, connection, sequence) = state.withLock { ($0.node, $0.connection, TransportConnection.nextSequence()) }
        node?.reportConnection(name, connection, sequence: sequence)
    }

    public func stop() {
        let carrier = state.withLock { s -> Carrier? in
            s.running = false
            s.generation &+= 1
            if let t = s.retryTimer { s.loop?.cancel(t) }
            s.retryTimer = nil
            closeConnectionLocked(&s)
            s.phase = .stopped
            defer { s.carrier = nil }
            return s.carrier
        }
        carrier?.close(reason: "The relay transport was disabled")
        publishConnection()
    }

    public func nodeUnlocked() {
        let reconnect = state.withLock { s -> Bool in
            guard s.running, s.phase == .locked else { return false }
            s.phase = .connecting
            s.failures = 0
            return true
        }
        if reconnect { publishConnection(); connect() }
    }

    /// Contacts changed: an idle transport (it had no contact) connects.
    public func contactsChanged() {
        let wake = state.withLock { $0.running && $0.phase == .idle }
        if wake { connect() }
    }

    /// "Connected", "Connecting…", "Idle: no contacts yet", "Disconnected: … Retrying in 8 s.", "Locked: …", "Revoked …".
    public var status: String { state.withLock { $0.statusLine(now: Clock.milliseconds()) } }

    /// Why the last connection failed or ended, if it did.
    public var lastError: String? { state.withLock { $0.lastError } }

    public func diagnostics() -> JSON {
        // Asked of the node outside our lock (the node calls transports outside its own).
        // Tracked by the address we were configured with, not the identifier the relay
        // states (another relay can state the same one, §8.3).
        let node = state.withLock { $0.node }
        let missed = node?.missedAcknowledgements(route: address.description)
        let sharing = node?.routesSharingRelayIdentifier(route: address.description) ?? []
        return state.withLock { s in
            var fields: [(String, JSON)] = [
                ("relay", .string(address.description)),
                ("state", .string(s.phase.rawValue)),
                ("status", .string(s.statusLine(now: Clock.milliseconds()))),
                ("last_sync_ms", s.lastSync.map { .int($0) } ?? .null),
                ("error", s.lastError.map { .string($0) } ?? .null),
                ("next_retry_ms", s.nextRetryAt.map { .int($0) } ?? .null),
                ("pseudonym", s.pseudonym.isEmpty ? .null : .string(Hex.encode(s.pseudonym))),
                ("relay_id", s.relayIdentifier.isEmpty ? .null : .string(Hex.encode(s.relayIdentifier))),
                ("subscribed", .int(Int64(s.subscribed.count))),
                ("in_flight", .int(Int64(s.requests.count))),
                ("posted", .int(s.posted)),
                ("accepted", .int(s.accepted)),
                ("fetched", .int(s.fetched)),
            ]
            // Messages this relay stored that got no end-to-end ack within the hour (a relay
            // that accepts and drops shows here, and the node tells the app).
            fields.append(("missed_acks", missed.map { .object([("count", .int($0.count)), ("last_ms", .int($0.lastMs))]) } ?? .null))
            // Other configured relays that stated this one's identifier (§8.4).
            fields.append(("relay_id_shared_with", .array(sharing.map { .string($0) })))
            if let rate = s.rate {
                fields.append(("rate_limit", .object([("per_hour", .int(Int64(rate.perHour))),
                                                      ("remaining_at_login", .int(Int64(rate.remaining)))])))
            }
            return .object(fields)
        }
    }
}

/// The transport's state, under its lock. The TLS connection is used on the loop only.
struct RelayState {
    enum Phase: String {
        /// `idle`: no session, for want of a contact (nothing to receive or send, §8.3).
        case stopped, idle, connecting, handshaking, authenticating, connected, waiting, locked, revoked
    }
    var phase: Phase = .stopped
    var running = false
    weak var node: Node?
    var loop: EventLoop?
    /// Bumped for every connection and by stop: callbacks of an older one are ignored.
    var generation: UInt64 = 0
    var fd: Int32 = -1
    var tls: TLSConnection?
    var decoder = try! FrameDecoder(maxLength: RelayFrame.maxLength)
    var writeBuffer: [UInt8] = []
    var wantsWritable = false
    var nonce: [UInt8] = []
    /// The relay's identifier from its CHALLENGE (§8.2): our mailboxes there derive from it.
    var relayIdentifier: [UInt8] = []
    var binding: [UInt8] = []
    var pseudonym: [UInt8] = []
    var carrier: Carrier?
    /// Meetings with the relay (§12.9): the sessions (by generation) in which we sent CARRY
    /// and in which the relay answered one. A relay of an earlier version ends the session
    /// as `malformed` at the first CARRY: then this transport sends no more (until it is
    /// made again), so routed mail through that relay still works.
    var carrySentIn: UInt64?
    var carryAnsweredIn: UInt64?
    var carryUnsupported = false
    var requests: [UInt32: MessageID] = [:]
    var nextRequest: UInt32 = 1
    /// Packets delivered in this session and not yet released, with their mailbox (a
    /// DELETE names both).
    var delivered: [MessageID: MailboxID] = [:]
    var subscribed: Set<MailboxID> = []
    var failures = 0
    /// When the current session became ready (monotonic ns) and the lifetime it was given:
    /// only a session that lived a good part of it earns an immediate reconnect, and only
    /// one that lived a while resets the backoff (a relay that accepts then drops at once
    /// must not make us log in in a tight loop).
    var readyAt: UInt64?
    var sessionLifetime: Double = 0
    /// The session subscribed or posted: only such a one, ended after a while, resets the
    /// backoff (the relay ends a session that does neither, §8.3).
    var sessionUsed = false
    /// A certificate rejection is logged once until a session succeeds again.
    var certificateRejectionLogged = false
    var retryTimer: EventLoop.TimerID?
    var tickTimer: EventLoop.TimerID?
    var connectTimer: EventLoop.TimerID?
    var nextRetryAt: Int64?
    var lastError: String?
    /// What kind of failure `lastError` is (pin mismatch, refused, …).
    var lastReason: TransportConnection.Reason?
    var lastSync: Int64?
    var lastReceived: UInt64 = 0
    var lastSent: UInt64 = 0
    var rate: (perHour: UInt32, remaining: UInt32)?
    var posted: Int64 = 0
    var accepted: Int64 = 0
    var fetched: Int64 = 0

    /// The phase as an app shows it (TransportConnection): connected, connecting, or
    /// disconnected with the reason and when it is retried.
    var connection: TransportConnection {
        switch phase {
        case .connected: return .connected
        case .connecting, .handshaking, .authenticating: return .connecting
        case .stopped: return TransportConnection(state: .disconnected, reason: .disabled)
        case .idle: return TransportConnection(state: .disconnected, reason: .idle, detail: "No contacts yet")
        case .locked: return TransportConnection(state: .disconnected, reason: .locked, detail: "Connects after unlock")
        case .revoked: return TransportConnection(state: .disconnected, reason: .revoked, detail: lastError)
        case .waiting:
            return TransportConnection(state: .disconnected, reason: lastReason ?? .other, detail: lastError, nextRetryMs: nextRetryAt)
        }
    }

    /// "Connected", "Connecting…", "Disconnected: … Retrying in 8 s." — diagnostics and the CLI.
    func statusLine(now: Int64) -> String {
        switch phase {
        case .connected: return "Connected"
        case .connecting, .handshaking, .authenticating: return "Connecting…"
        case .stopped: return "Disabled"
        case .idle: return "Idle: no contacts yet"
        case .locked: return "Locked: connects after unlock"
        case .revoked: return "Revoked by the relay: \(lastError ?? "")"
        case .waiting:
            let wait = max(0, ((nextRetryAt ?? now) - now + 999) / 1000)
            return "Disconnected: \(lastError ?? "no connection"). Retrying in \(wait) s."
        }
    }
}
