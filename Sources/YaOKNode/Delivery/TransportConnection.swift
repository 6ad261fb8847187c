import YaOKSupport

/// Whether a transport can carry messages right now, as an app shows it: connected,
/// connecting, or disconnected with the reason and the time of the next retry. A relay
/// reports its own (a wrong pin is "disconnected: pin mismatch", not "running"), as do
/// Bluetooth LE (radio off, connecting while it starts) and the LAN (no network); a
/// transport that reports none (an app's own) is connected while it runs.
public struct TransportConnection: Sendable, Equatable {
    public enum State: String, Sendable, Equatable {
        case disconnected, connecting, connected
    }

    /// Why a transport is not connected. The names are the JSON's; the C numbers
    /// (YAOK_DISCONNECT_*) are given in the FFI layer.
    public enum Reason: String, Sendable, Equatable, CaseIterable {
        /// Switched off (`setTransport(enabled: false)`), or never started.
        case disabled
        /// Its start failed (the port in use, no adapter): `detail` says why.
        case failed
        /// The relay's certificate does not match the configured pin.
        case pinMismatch = "pin_mismatch"
        /// The relay's certificate was rejected for another reason (CA, name, none sent).
        case certificate
        /// The TLS handshake failed.
        case tls
        /// Nothing listens at the address (connection refused).
        case refused
        /// No answer within the connect timeout.
        case timedOut = "timed_out"
        /// The name did not resolve.
        case dns
        /// No route to the host or network.
        case unreachable
        /// The other end closed the connection.
        case closed
        /// The other end broke the protocol.
        case protocolError = "protocol"
        /// The relay revoked our pseudonym: no retry.
        case revoked
        /// The node is locked: connects again after unlock.
        case locked
        /// Nothing to do (a relay with no contact yet): connects when there is.
        case idle
        /// Anything else: `detail` says what.
        case other
        /// The radio is off or gone (a Bluetooth adapter powered off or removed): connects
        /// when it is back.
        case radioOff = "radio_off"
        /// No network to be on (the LAN transport with no IPv4 interface up other than
        /// loopback, or its address gone): connects when one is back.
        case noNetwork = "no_network"

        /// Whether the other end answered (a TCP connection was made): a wrong pin or TLS
        /// failure still shows that the network works, a refusal or timeout does not.
        public var remoteAnswered: Bool {
            switch self {
            case .pinMismatch, .certificate, .tls, .closed, .protocolError, .revoked: return true
            default: return false
            }
        }
    }

    public let state: State
    /// Nil when connected or connecting.
    public let reason: Reason?
    /// The reason as a person reads it ("The relay's certificate does not match the pinned key").
    public let detail: String?
    /// Wall-clock ms of the next attempt, when one is scheduled.
    public let nextRetryMs: Int64?

    public init(state: State, reason: Reason? = nil, detail: String? = nil, nextRetryMs: Int64? = nil) {
        self.state = state
        self.reason = reason
        self.detail = detail
        self.nextRetryMs = nextRetryMs
    }

    /// What this says about the other end being reachable: true when connected or refused
    /// by an end that answered, false when it did not answer (refused, timed out, DNS,
    /// unreachable), nil when it says nothing (connecting, idle, locked, disabled, other).
    public var answered: Bool? {
        switch state {
        case .connected: return true
        case .connecting: return nil
        case .disconnected:
            guard let reason else { return nil }
            if reason.remoteAnswered { return true }
            switch reason {
            case .refused, .timedOut, .dns, .unreachable: return false
            default: return nil
            }
        }
    }

    /// A process-wide increasing number that orders a transport's reports
    /// (`Node.reportConnection(_:_:sequence:)`): take it under the same lock as the
    /// connection it goes with, so that the later reading always has the larger number.
    public static func nextSequence() -> UInt64 {
        sequences.withLock { n in
            n &+= 1
            return n
        }
    }

    private static let sequences = Locked<UInt64>(0)

    public static let connected = TransportConnection(state: .connected)
    public static let connecting = TransportConnection(state: .connecting)

    public var json: JSON {
        .object([("state", .string(state.rawValue)), ("reason", reason.map { .string($0.rawValue) } ?? .null),
                 ("detail", detail.map { .string($0) } ?? .null),
                 ("next_retry_ms", nextRetryMs.map { .int($0) } ?? .null)])
    }
}

/// "Internet: Available/Unavailable" (AC-060-01): whether the node has a usable route to
/// the internet. A transport that reaches the internet (a relay) decides when it has an
/// answer: connected, or refused by a server that answered (wrong pin, TLS), is available;
/// refused, timed out, no DNS is unavailable. Otherwise (no such transport, or still
/// connecting) the kernel's default route decides.
public struct InternetStatus: Sendable, Equatable {
    /// What the internet transports (relays) say, by their last attempt.
    public enum Relay: String, Sendable, Equatable {
        /// None configured and running.
        case none
        /// No attempt has ended yet (connecting, idle, locked).
        case unknown
        /// One answered on its last attempt.
        case answers
        /// None answered on its last attempt.
        case noAnswer = "no_answer"
    }

    public let available: Bool
    /// A default route (IPv4 or IPv6) exists.
    public let defaultRoute: Bool
    public let relay: Relay

    public init(defaultRoute: Bool, relay: Relay) {
        self.defaultRoute = defaultRoute
        self.relay = relay
        switch relay {
        case .answers: available = true
        case .noAnswer: available = false
        case .none, .unknown: available = defaultRoute
        }
    }

    /// "Internet: Available" or "Internet: Unavailable", as AC-060-01 writes it.
    public var line: String { "Internet: \(available ? "Available" : "Unavailable")" }

    /// Why, for a person: "relay answers", "no default route", "the relay does not answer".
    public var why: String {
        switch relay {
        case .answers: return "the relay answers"
        case .noAnswer: return defaultRoute ? "the relay does not answer" : "no default route; the relay does not answer"
        case .none, .unknown: return defaultRoute ? "a default route exists" : "no default route"
        }
    }

    public var json: JSON {
        .object([("available", .bool(available)), ("line", .string(line)), ("default_route", .bool(defaultRoute)),
                 ("relay", .string(relay.rawValue)), ("why", .string(why))])
    }
}
