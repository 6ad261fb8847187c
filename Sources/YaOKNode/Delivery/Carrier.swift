import YaOKSupport
import YaOKWire
import YaOKCrypto

/// A store-and-forward service the node hands packets to for contacts it has no direct
/// link to: a relay session (docs/PROTOCOL.md §8). Unlike a `Link` it is not a peer: no
/// handshake runs over it, packets travel as they are (sealed end to end), and a packet
/// counts as `sent` once the service has stored it (`accepted`). A transport opens one
/// with `Node.openCarrier` when its session is ready and closes it when the session ends.
///
/// Threads: every method may be called from any thread. `receive` queues the packet for
/// the event thread's inbound drain; `accepted`, `refused`, `receiveCarry` and `close` do
/// their work on the calling thread, under the node's lock. The callbacks given to
/// `openCarrier` run on the event thread, outside the lock.
public final class Carrier: Sendable {
    public let id: UInt64
    /// The transport's name ("relay").
    public let transport: String
    /// Where the user configured the service ("host:port" of a relay): what the node tracks
    /// it by (missed acks, the route a re-post avoids). Not the identifier the relay states,
    /// which any relay can copy from another's CHALLENGE (§8.3).
    public let route: String
    /// The relay's identifier (its CHALLENGE, §8.2): the mailboxes of this service.
    public let relay: [UInt8]

    let callbacks: CarrierCallbacks
    private weak let node: Node?

    init(id: UInt64, transport: String, route: String, relay: [UInt8], node: Node, callbacks: CarrierCallbacks) {
        self.id = id
        self.transport = transport
        self.route = route
        self.relay = relay
        self.node = node
        self.callbacks = callbacks
    }

    /// The service stored these packets durably: messages among them are now `sent`.
    public func accepted(_ packetIDs: [MessageID]) {
        node?.carrierAccepted(self, packetIDs)
    }

    /// The service refused a packet. `.rateLimited` with `retryAfterMs`: it waits that long
    /// (still `pending`, and the node emits a notice); anything else counts as a failed
    /// attempt, retried on the usual schedule.
    public func refused(_ packetID: MessageID, error: YaOKError, retryAfterMs: Int64? = nil) {
        node?.carrierRefused(self, packetID, error: error, retryAfterMs: retryAfterMs)
    }

    /// A routed packet fetched from one of our mailboxes. The node answers through the
    /// `release` callback once it took the packet (or it can never be taken), so the service
    /// may delete it; a packet not released comes again in a later session. False when the
    /// carrier is closed or the node's queue is full (the transport should stop reading).
    @discardableResult
    public func receive(_ packet: [UInt8]) -> Bool {
        node?.carrierReceived(self, packet) ?? false
    }

    /// A meeting payload from the service (a relay's CARRY frame, §12.9): the relay as a
    /// carrier. Ignored when carrying is off or the carrier is closed.
    public func receiveCarry(_ message: CarryLinkMessage) {
        node?.carrierCarry(self, message)
    }

    /// The session ended. Packets handed to it and not yet accepted go back to the outbox
    /// (not counted as failed: the next session, or another route, takes them). Idempotent.
    public func close(reason: String = "closed by transport") {
        node?.closeCarrier(self, reason: reason, notifyTransport: false)
    }
}

/// What the node asks of a carrier's transport. All run on the event thread.
public struct CarrierCallbacks: Sendable {
    /// Store these packets (in order) in the given mailboxes.
    public var post: @Sendable ([CarrierPost]) -> Void
    /// These packets were taken (or can never be): delete them from our mailboxes.
    public var release: @Sendable ([MessageID]) -> Void
    /// Our contacts changed: subscribe to `Node.incomingMailboxes()` again.
    public var mailboxesChanged: @Sendable () -> Void
    /// The node closed the carrier (locked, closing): end the session.
    public var closed: @Sendable (String) -> Void
    /// Send this meeting payload to the service (a relay's CARRY frame, §12.9). A service
    /// that does not carry may ignore it.
    public var carry: @Sendable (CarryLinkMessage) -> Void

    public init(post: @escaping @Sendable ([CarrierPost]) -> Void, release: @escaping @Sendable ([MessageID]) -> Void,
                mailboxesChanged: @escaping @Sendable () -> Void, closed: @escaping @Sendable (String) -> Void,
                carry: @escaping @Sendable (CarryLinkMessage) -> Void = { _ in }) {
        self.post = post
        self.release = release
        self.mailboxesChanged = mailboxesChanged
        self.closed = closed
        self.carry = carry
    }
}

/// One packet for a carrier: the mailbox it goes to (§8.2), that mailbox's key (to sign
/// the POST with, the proof that we may post there) and the routed packet.
public struct CarrierPost: Sendable, Equatable {
    public let mailbox: MailboxID
    public let mailboxKey: SigningKey
    public let packetID: MessageID
    public let packet: [UInt8]

    public static func == (a: CarrierPost, b: CarrierPost) -> Bool {
        a.mailbox == b.mailbox && a.packetID == b.packetID && a.packet == b.packet
    }
}
