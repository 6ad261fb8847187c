import YaOKSupport
import YaOKLoop

/// Who opened a connection.
enum ConnectionDirection: String { case inbound, outbound }

/// Where a connection is in its life.
enum ConnectionPhase: String {
    /// An outbound connect(2) in progress.
    case connecting
    /// Connected: a link is open (or being opened) over it.
    case open
}

/// What every transport keeps of one connection (a TCP connection, an L2CAP channel): the
/// fields the shared mechanism (`ConnectionTransport`) reads and writes. A transport's
/// subclass adds its address and its write queue. Touched only under the transport's lock.
class SocketConnection {
    typealias Direction = ConnectionDirection
    typealias Phase = ConnectionPhase

    let id: UInt64
    let fd: Int32
    let direction: Direction
    var phase: Phase
    var link: (any TransportLink)?
    /// Whether the descriptor is watched for writability (only while bytes wait).
    var watchingWrites = false
    /// Wall clock ms, for diagnostics.
    let sinceMs: Int64
    /// Monotonic ns of the connect(2) or the accept (a transport may move it to the open).
    var startedAt: UInt64
    /// Monotonic ns of the last unit received (from the open on): for the idle timeout.
    var lastReceived: UInt64
    /// Units received (keepalives do not count).
    var unitsReceived = 0
    var bytesIn = 0
    var bytesOut = 0
    /// Writes made to the kernel (each takes everything queued that it can).
    var writeCalls = 0
    /// The link has authenticated the peer (its handshake completed), as last asked of it
    /// outside the lock (`refreshAuthentication`): may lag the link by up to a tick. Such a
    /// connection is never evicted.
    var authenticated = false
    /// Monotonic ns when `authenticated` was first seen: a stranger's grace period counts from it.
    var authenticatedAt: UInt64 = 0
    /// Whether the authenticated peer is a contact: nil while unknown (no handshake yet, or a
    /// node never unlocked since it started). Asked again at each tick until true.
    var contact: Bool?

    init(id: UInt64, fd: Int32, direction: Direction, phase: Phase, now: UInt64, nowMs: Int64) {
        self.id = id
        self.fd = fd
        self.direction = direction
        self.phase = phase
        sinceMs = nowMs
        startedAt = now
        lastReceived = now
    }

    /// The peer's address as the diagnostics' recent closes name it.
    var closeAddress: String { "" }
}

/// Why a connection ended, for diagnostics (the last few only).
struct ClosedConnection {
    let address: String
    let direction: ConnectionDirection
    let reason: String
    let atMs: Int64
}
