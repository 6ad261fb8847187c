import CYaOK
import YaOK
import YaOKSupport

/* ---- typed access: transport connections and the internet status ---- */

/// A transport connection in the ABI's numbers: YAOK_CONNECTIVITY_*, YAOK_DISCONNECT_* and
/// the next retry (0: none). The one place these numbers are given.
struct ConnectionCodes {
    let state: UInt32
    let reason: UInt32
    let nextRetryMs: Int64

    init(_ c: TransportConnection) {
        switch c.state {
        case .disconnected: state = YAOK_CONNECTIVITY_DISCONNECTED
        case .connecting: state = YAOK_CONNECTIVITY_CONNECTING
        case .connected: state = YAOK_CONNECTIVITY_CONNECTED
        }
        reason = c.reason.map(ConnectionCodes.code) ?? YAOK_DISCONNECT_NONE
        nextRetryMs = c.nextRetryMs ?? 0
    }

    /// From diagnostics' "connection" object (absent: disconnected, reason other).
    init(json: JSON?) {
        let state = json?["state"]?.text.flatMap(TransportConnection.State.init(rawValue:)) ?? .disconnected
        let reason = json?["reason"]?.text.flatMap(TransportConnection.Reason.init(rawValue:))
        self.init(TransportConnection(state: state, reason: state == .disconnected ? reason ?? .other : nil,
                                      nextRetryMs: json?["next_retry_ms"]?.integer))
    }

    /// yaok_event_connection's out-values.
    var fields: (UInt32, UInt32, Int64) { (state, reason, nextRetryMs) }

    static func code(_ reason: TransportConnection.Reason) -> UInt32 {
        switch reason {
        case .disabled: return YAOK_DISCONNECT_DISABLED
        case .failed: return YAOK_DISCONNECT_FAILED
        case .pinMismatch: return YAOK_DISCONNECT_PIN_MISMATCH
        case .certificate: return YAOK_DISCONNECT_CERTIFICATE
        case .tls: return YAOK_DISCONNECT_TLS
        case .refused: return YAOK_DISCONNECT_REFUSED
        case .timedOut: return YAOK_DISCONNECT_TIMED_OUT
        case .dns: return YAOK_DISCONNECT_DNS
        case .unreachable: return YAOK_DISCONNECT_UNREACHABLE
        case .closed: return YAOK_DISCONNECT_CLOSED
        case .protocolError: return YAOK_DISCONNECT_PROTOCOL
        case .revoked: return YAOK_DISCONNECT_REVOKED
        case .locked: return YAOK_DISCONNECT_LOCKED
        case .idle: return YAOK_DISCONNECT_IDLE
        case .other: return YAOK_DISCONNECT_OTHER
        case .radioOff: return YAOK_DISCONNECT_RADIO_OFF
        case .noNetwork: return YAOK_DISCONNECT_NO_NETWORK
        }
    }
}

extension EventView {
    /// A TRANSPORT_CONNECTION event's connection in the ABI's numbers.
    func connection() throws -> ConnectionCodes {
        guard case .transportConnection(_, let c) = event else { throw absent("connection", label) }
        return ConnectionCodes(c)
    }

    /// An INTERNET_CHANGED event's status: 1 available, 0 not.
    func internetAvailable() throws -> Int32 {
        guard case .internetChanged(let i) = event else { throw absent("internet status", label) }
        return i.available ? 1 : 0
    }
}

@c @implementation
public func yaok_event_connection(_ event: UnsafePointer<yaok_event>?, _ outState: UnsafeMutablePointer<UInt32>?,
                                  _ outReason: UnsafeMutablePointer<UInt32>?, _ outNextRetry: UnsafeMutablePointer<Int64>?) -> Int32 {
    fillValues({ try LiveEvents.view(event) }, (outState, "out_state"), (outReason, "out_reason"),
               (outNextRetry, "out_next_retry_ms")) { view in try view.connection().fields }
}

@c @implementation
public func yaok_event_internet(_ event: UnsafePointer<yaok_event>?, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    eventValue(event, out, "out_available") { view in try view.internetAvailable() }
}

@c @implementation
public func yaok_diagnostics_transport_connection(_ d: OpaquePointer?, _ index: Int, _ outState: UnsafeMutablePointer<UInt32>?,
                                                  _ outReason: UnsafeMutablePointer<UInt32>?, _ outNextRetry: UnsafeMutablePointer<Int64>?,
                                                  _ outDetail: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    fillValues({ try diagnostics(d) }, (outState, "out_state"), (outReason, "out_reason"), (outNextRetry, "out_next_retry_ms"),
               (outDetail, "out_detail")) { d in try d.entry(index).connectionFields }
}

@c @implementation
public func yaok_diagnostics_internet(_ d: OpaquePointer?, _ outAvailable: UnsafeMutablePointer<Int32>?,
                                      _ outDefaultRoute: UnsafeMutablePointer<Int32>?,
                                      _ outLine: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    fillValues({ try diagnostics(d) }, (outAvailable, "out_available"), (outDefaultRoute, "out_default_route"),
               (outLine, "out_line")) { d in d.internet }
}
