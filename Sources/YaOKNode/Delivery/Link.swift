import YaOKWire
import YaOKSupport
import YaOKLoop
import YaOKCrypto

/// One encrypted session with a neighbour over some transport (docs/PROTOCOL.md §5): an
/// anonymous handshake (§5.8), then contact recognition (§5.9), which tells the peer who
/// this node is only if it is a contact. A transport opens it for each connection with `Node.openLink`,
/// feeds it what arrives (`receive`) and closes it when the connection ends; the node runs
/// the handshake, encryption, fragmentation to the MTU, delivery and receipts over it.
///
/// Threads: `receive` and `close` may be called from any thread. What `receive` queues is
/// processed on the node's event thread, in the order the units came; `close` ends the link
/// on the calling thread, under the node's lock (its packets in flight are retried). The
/// `send` callback given to `openLink` is called on the event thread, never while the
/// node's lock is held (a transport of this package may take its units on any thread
/// instead: `LinkSender`).
public final class Link: Sendable {
    /// Which side this node is: the initiator speaks first (the TCP connector, the BLE
    /// central, or whichever side an app's own radio protocol says). `LinkRole`, by the name
    /// the API has always had.
    public typealias Role = LinkRole

    public let id: UInt64
    /// The transport's name: "lan", "ble", "relay", or what an app calls its own.
    public let transport: String
    public let role: Role
    /// The largest unit the transport carries; larger packets are fragmented (§4.7).
    public let mtu: Int

    let sender: LinkSender
    let closedByNode: @Sendable (String) -> Void
    private weak let node: Node?
    /// What the engine last told this link about its peer (`notePeer`): a transport asks it
    /// without the node's lock, which it may be waiting for in another thread.
    private let peer = Locked(PeerStanding.unknown)

    /// The peer as the node knows it: handshake not complete (or the link closed), or
    /// complete ("authenticated": the link is ready, §5.9), with whether the peer is a
    /// contact (true: recognised; false: its probe named none of ours; nil: not known yet).
    enum PeerStanding: Equatable {
        case unknown
        case authenticated(isContact: Bool?)
    }

    init(id: UInt64, transport: String, role: Role, mtu: Int, node: Node,
         sender: LinkSender, closed: @escaping @Sendable (String) -> Void) {
        self.id = id
        self.transport = transport
        self.role = role
        self.mtu = mtu
        self.node = node
        self.sender = sender
        closedByNode = closed
    }

    /// One unit as the transport received it (a frame's payload on a stream, a write or
    /// notification on BLE). Returns at once; the node processes it on its event thread.
    /// False when the unit was refused: the link is closed, or it sent faster than the node
    /// processes (it is then closed; a transport should stop reading from it).
    @discardableResult
    public func receive(_ unit: [UInt8]) -> Bool {
        node?.linkReceived(self, unit) ?? false
    }

    /// Whether the handshake has completed: the link is ready (PROTOCOL.md §5.9). It says
    /// nothing about who the peer is (`peerIsContact` does). False before, and once the link
    /// is closed. Any thread; never takes the node's lock.
    public var isAuthenticated: Bool {
        peer.withLock { $0 } != .unknown
    }

    /// Whether the peer is one of our contacts: true once a contact's proof verified on this
    /// link (recognised, §5.9), false once the peer's probe named none of our contacts (or the
    /// recognised contact was deleted), nil before either, and once the link is closed. The
    /// node recognises contacts while locked too, with the contact link keys kept from the
    /// last unlock. For a transport that gives strangers fewer of its scarce slots (BLE,
    /// PROTOCOL.md §9.2). Any thread; never takes the node's lock.
    public var peerIsContact: Bool? {
        guard case .authenticated(let isContact) = peer.withLock({ $0 }) else { return nil }
        return isContact
    }

    /// The engine's word on the peer (under the node's lock; this lock is taken inside it,
    /// never the other way round).
    func notePeer(_ standing: PeerStanding) {
        peer.withLock { $0 = standing }
    }

    /// The transport lost the connection (or the app is done with it). Messages in flight
    /// over it count as failed attempts and are retried. Idempotent.
    public func close(reason: String = "closed by transport") {
        node?.closeLink(self, reason: reason, notifyTransport: false)
    }
}
