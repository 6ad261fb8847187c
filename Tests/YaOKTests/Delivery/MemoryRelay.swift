import Foundation
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKNode

/// A relay in memory for engine tests (the real one is yaok-relay, tested with real
/// processes): mailboxes keyed as in docs/PROTOCOL.md §8, sessions as carriers, with an
/// optional rate limit. Posting is idempotent per (mailbox, message ID), like the real one.
final class MemoryRelay: Sendable {
    struct Session {
        let carrier: Carrier
        var mailboxes: Set<MailboxID>
    }
    struct State {
        var mailboxes: [MailboxID: [(id: MessageID, packet: [UInt8])]] = [:]
        var sessions: [ObjectIdentifier: Session] = [:]
        var nodes: [ObjectIdentifier: Node] = [:]
        var accepted = 0
        var deleted = 0
        /// Refuse posts of messages beyond this many (rate limit), with this retry.
        var messageLimit: Int?
        var retryAfterMs: Int64 = 600_000
        /// A lying relay: answers ACCEPTED and stores nothing.
        var dropsEverything = false
        /// Acks to lose (answered ACCEPTED, never stored), as a relay that lost them would.
        var acksToDrop = 0
        /// The packets its recipients deleted: an identical re-post is ACCEPTED and not
        /// stored again, as the real relay's deletion notes do (PROTOCOL.md §8.3).
        var deletedPackets: Set<[UInt8]> = []
    }
    let state = Locked(State())
    /// The identifier this relay states (§8.2): its mailboxes derive from it.
    let identifier: [UInt8]
    /// Where the node "configured" it (the carrier's route): unique unless a test gives one.
    let address: String

    init(identifier: [UInt8] = Array(0..<16), address: String? = nil) {
        self.identifier = identifier
        self.address = address ?? "memory-relay-\(UUID().uuidString)"
    }

    /// A lying relay (`dropsEverything`) with a session for `node` already open.
    static func lying(identifier: [UInt8] = Array(0..<16), address: String? = nil, connectedTo node: Node) throws -> MemoryRelay {
        let liar = MemoryRelay(identifier: identifier, address: address)
        liar.state.withLock { $0.dropsEverything = true }
        try liar.connect(node)
        return liar
    }

    /// Opens a session for `node`: a carrier, subscribed to the node's incoming mailboxes.
    @discardableResult
    func connect(_ node: Node) throws -> Carrier {
        let key = ObjectIdentifier(node)
        let carrier = try node.openCarrier(transport: "relay", route: address, relay: identifier, callbacks: CarrierCallbacks(
            post: { [weak self] posts in self?.post(posts, from: key) },
            release: { [weak self] ids in self?.release(ids, from: key) },
            mailboxesChanged: { [weak self] in self?.subscribe(key) },
            closed: { [weak self] _ in self?.state.withLock { _ = $0.sessions.removeValue(forKey: key) } }))
        state.withLock {
            $0.sessions[key] = Session(carrier: carrier, mailboxes: [])
            $0.nodes[key] = node
        }
        subscribe(key)
        return carrier
    }

    func disconnect(_ node: Node) {
        let session = state.withLock { $0.sessions.removeValue(forKey: ObjectIdentifier(node)) }
        session?.carrier.close(reason: "test disconnect")
    }

    var stored: Int { state.withLock { $0.mailboxes.values.map(\.count).reduce(0, +) } }

    /// The relay loses everything it stored (a wiped disk, or a relay that drops packets).
    func loseEverything() { state.withLock { $0.mailboxes = [:] } }

    /// Posts accepted so far (messages and acks, re-posts included).
    let posts = Locked(0)

    private func subscribe(_ key: ObjectIdentifier) {
        guard let node = state.withLock({ $0.nodes[key] }), let keys = try? node.incomingMailboxes(relay: identifier) else { return }
        let ids = Set(keys.compactMap { try? MailboxID(bytes: $0.publicKey) })
        let (carrier, backlog) = state.withLock { s -> (Carrier?, [[UInt8]]) in
            guard var session = s.sessions[key] else { return (nil, []) }
            let new = ids.subtracting(session.mailboxes)
            session.mailboxes.formUnion(ids)
            s.sessions[key] = session
            return (session.carrier, new.flatMap { s.mailboxes[$0]?.map(\.packet) ?? [] })
        }
        for p in backlog { carrier?.receive(p) }
    }

    private func post(_ posts: [CarrierPost], from key: ObjectIdentifier) {
        self.posts.withLock { $0 += posts.count }
        var accepted: [MessageID] = []
        var refused: [MessageID] = []
        var pushes: [(Carrier, [UInt8])] = []
        let (carrier, retry) = state.withLock { s -> (Carrier?, Int64) in
            for p in posts {
                let isMessage = (try? RoutedHeader.parse(p.packet))?.0.type == .message
                if isMessage, let limit = s.messageLimit, s.accepted >= limit {
                    refused.append(p.packetID)
                    continue
                }
                if s.dropsEverything || s.deletedPackets.contains(p.packet) {
                    accepted.append(p.packetID)
                    continue
                }
                if !isMessage, s.acksToDrop > 0 {
                    s.acksToDrop -= 1
                    accepted.append(p.packetID)
                    continue
                }
                if !(s.mailboxes[p.mailbox]?.contains { $0.id == p.packetID } ?? false) {
                    s.mailboxes[p.mailbox, default: []].append((p.packetID, p.packet))
                    if isMessage { s.accepted += 1 }
                    for session in s.sessions.values where session.mailboxes.contains(p.mailbox) {
                        pushes.append((session.carrier, p.packet))
                    }
                }
                accepted.append(p.packetID)
            }
            return (s.sessions[key]?.carrier, s.retryAfterMs)
        }
        carrier?.accepted(accepted)
        for id in refused { carrier?.refused(id, error: YaOKError(.rateLimited), retryAfterMs: retry) }
        for (c, p) in pushes { c.receive(p) }
    }

    private func release(_ ids: [MessageID], from key: ObjectIdentifier) {
        state.withLock { s in
            guard let session = s.sessions[key] else { return }
            let drop = Set(ids)
            for m in session.mailboxes {
                let before = s.mailboxes[m]?.count ?? 0
                for packet in s.mailboxes[m] ?? [] where drop.contains(packet.id) { s.deletedPackets.insert(packet.packet) }
                s.mailboxes[m]?.removeAll { drop.contains($0.id) }
                s.deleted += before - (s.mailboxes[m]?.count ?? 0)
            }
        }
    }
}
