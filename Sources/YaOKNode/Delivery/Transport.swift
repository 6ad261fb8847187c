import YaOKSupport
import YaOKLoop

/// A way to reach neighbours: the LAN, a relay, Bluetooth LE, or a radio an app drives
/// itself. A transport turns each connection it makes or accepts into a `Link`
/// (`Node.openLink`) and closes the link when the connection ends; the node does the
/// handshake, encryption, fragmentation, delivery and acknowledgements over it.
///
/// Threads: `start` and `stop` may be called from any thread (the node calls them from the
/// caller of `setTransport(_:enabled:)`). Sockets are registered on the node's event loop
/// (`Node.eventLoop`) and serviced there; a transport never blocks that thread.
public protocol Transport: AnyObject, Sendable {
    /// Short, stable, lower case: "lan", "relay", "ble". Used in the API and the CLI.
    var name: String { get }
    /// What a person reads in "Online (WiFi)": "WiFi", "Relay", "Bluetooth".
    var displayName: String { get }
    /// Opens its sockets and starts finding peers. Throws a clear error when it cannot
    /// (the port is in use, no Bluetooth adapter); the node then reports the transport as
    /// failed with that message and keeps running its other transports.
    func start(on node: Node) throws
    /// Closes every socket and link, and abandons a start in progress. Idempotent; called
    /// for every registered transport when the node closes, running or not.
    func stop()
    /// Its own diagnostics as a JSON object: listening address, peers discovered and when,
    /// connections (docs/ABI.md, "diagnostics").
    func diagnostics() -> JSON
    /// The node was unlocked: a transport that needs the keys (a relay: its mailboxes and
    /// login) connects again. Called on the event thread.
    func nodeUnlocked()
    /// Contacts were added, removed or changed: a transport that idles without a contact (a
    /// relay) connects. Called on the event thread.
    func contactsChanged()
    /// Whether it reaches its peers over the internet (a relay): its connection then says
    /// whether the internet is usable ("Internet: Available", `Node.internet()`).
    var reachesInternet: Bool { get }
    /// Its connection now, for one that reports it (then also through
    /// `Node.reportConnection` on every change); nil: connected whenever it runs.
    /// Read right after `start`, outside the node's lock.
    var connection: TransportConnection? { get }
}

extension Transport {
    public func nodeUnlocked() {}
    public func contactsChanged() {}
    public var reachesInternet: Bool { false }
    public var connection: TransportConnection? { nil }
}

/// A transport as the node manages it.
public struct TransportState: Sendable, Equatable {
    public enum Phase: String, Sendable, Equatable {
        case disabled, running, failed
    }
    public let name: String
    public let displayName: String
    public let phase: Phase
    /// Why it failed (`phase == .failed`).
    public let error: String?
    /// Links open over it right now.
    public let links: Int
    /// Wall-clock ms of the last packet exchanged over it, if any.
    public let lastActivity: Int64?
    /// Connected, connecting or disconnected with the reason (`reportConnection`); not
    /// running is disconnected (disabled, or failed with the error).
    public let connection: TransportConnection
}
