import YaOKSupport
import YaOKLoop

/// One encrypted, mutually authenticated session with a neighbour over some transport
/// (docs/PROTOCOL.md §5). A transport opens it for each connection with `Node.openLink`,
/// feeds it what arrives (`receive`) and closes it when the connection ends; the node runs
/// the handshake, encryption, fragmentation to the MTU, delivery and receipts over it.
///
/// Threads: `receive` and `close` may be called from any thread; the work runs on the
/// node's event thread, in the order the calls were made. The `send` callback given to
/// `openLink` is called on the event thread, never while the node's lock is held.
public final class Link: Sendable {
    /// The side that speaks first: the TCP connector, the BLE central, or whichever side
    /// an app's own radio protocol says.
    public enum Role: Sendable, Equatable { case initiator, responder }

    public let id: UInt64
    /// The transport's name: "lan", "ble", "relay", or what an app calls its own.
    public let transport: String
    public let role: Role
    /// The largest unit the transport carries; larger packets are fragmented (§4.7).
    public let mtu: Int

    let sendUnit: @Sendable ([UInt8]) -> Void
    let closedByNode: @Sendable (String) -> Void
    private weak let node: Node?

    init(id: UInt64, transport: String, role: Role, mtu: Int, node: Node,
         send: @escaping @Sendable ([UInt8]) -> Void, closed: @escaping @Sendable (String) -> Void) {
        self.id = id
        self.transport = transport
        self.role = role
        self.mtu = mtu
        self.node = node
        sendUnit = send
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

    /// Whether the handshake has completed: the peer is authenticated (PROTOCOL.md §5.2).
    /// False before, and once the link is closed. Any thread; takes the node's lock.
    public var isAuthenticated: Bool {
        node?.linkIsAuthenticated(self) ?? false
    }

    /// Whether the authenticated peer is one of our contacts: true or false when the node
    /// can tell, nil when it cannot — the handshake has not completed (or the link is
    /// closed), or the node is locked and its contacts cannot be read (§6.3). For a
    /// transport that gives strangers fewer of its scarce slots (BLE, PROTOCOL.md §9.2).
    /// Any thread; takes the node's lock, as `isAuthenticated`.
    public var peerIsContact: Bool? {
        guard let node else { return nil }
        return node.state.withLock { s -> Bool? in
            guard let link = s.delivery.links[id], let peer = link.peer else { return nil }
            if link.contactID != nil { return true }
            // Matched at the handshake only if the contacts could be read then; ask the
            // directory now, or while locked the digests kept from the last unlock.
            if s.keys != nil, let directory = s.delivery.peers { return directory.contact(for: peer) != nil }
            return s.delivery.contactDigests?.contains(peer)
        }
    }

    /// The transport lost the connection (or the app is done with it). Messages in flight
    /// over it count as failed attempts and are retried. Idempotent.
    public func close(reason: String = "closed by transport") {
        node?.closeLink(self, reason: reason, notifyTransport: false)
    }
}
