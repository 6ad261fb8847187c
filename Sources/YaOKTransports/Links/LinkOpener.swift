import YaOKWire
import YaOKLoop
import YaOKCrypto
import YaOKNode

/// What a transport needs from a node: the event loop its sockets are serviced on, and a
/// way to turn a connection into a link. `Node` is the one production conformance
/// (`Node+LinkOpener.swift`, which calls `Node.openLink`); the transport tests also run the
/// transport against a fake, to check its own behaviour without a handshake in the way.
package protocol LinkOpener: AnyObject, Sendable {
    var eventLoop: EventLoop { get }

    /// `Node.openLink`: `send` takes the units (each ≤ `mtu` bytes) to transmit, on the
    /// event thread or on any thread as it says (`LinkSender`), and must not block; `closed`
    /// is called on the event thread when the node ends the link. The connector is the
    /// initiator. `stream`: a byte stream that carries packets whole (TCP): the node refuses
    /// fragments on it (PROTOCOL.md §4.7).
    func openLink(transport: String, as role: LinkRole, mtu: Int, stream: Bool, send: LinkSender,
                  closed: @escaping @Sendable (String) -> Void) throws -> any TransportLink
}

/// The transport's view of a `Link`.
package protocol TransportLink: AnyObject, Sendable {
    /// One unit that arrived (any thread). False: refused (closed, or the peer sends faster
    /// than the node processes: the node closes the link); stop reading from it.
    @discardableResult
    func receive(_ unit: [UInt8]) -> Bool
    /// The connection is gone (any thread; idempotent).
    func close(reason: String)
    /// Whether the link's handshake has completed (its peer is authenticated). Any thread;
    /// never takes the node's lock (`Link` keeps what the node told it).
    var isAuthenticated: Bool { get }
    /// Whether the authenticated peer is one of the node's contacts: true or false when
    /// known, nil when not (no handshake yet, or the node has not read its contacts since it
    /// was opened). Any thread; never takes the node's lock.
    var peerIsContact: Bool? { get }
}

extension LinkOpener {
    /// Opens the link of one connection (outside the transport's lock: the node may send at
    /// once) and hands it to `attach`, which keeps it if the connection is still there. One
    /// that ended meanwhile (the node refused it at once, the transport stopped) must not
    /// outlive it, so its link is closed; a link that cannot be opened goes to `failed`.
    func openLink(transport: String, as role: LinkRole, mtu: Int, stream: Bool = false,
                  send: LinkSender, closed: @escaping @Sendable (String) -> Void,
                  attach: (any TransportLink) -> Bool, failed: (Error) -> Void) {
        do {
            let link = try openLink(transport: transport, as: role, mtu: mtu, stream: stream, send: send, closed: closed)
            if !attach(link) { link.close(reason: "connection closed") }
        } catch {
            failed(error)
        }
    }
}
