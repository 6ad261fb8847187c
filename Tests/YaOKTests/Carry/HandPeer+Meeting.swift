import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A hand-driven peer's side of a meeting (docs/PROTOCOL.md §11, §12), for tests that need the
/// order of its payloads in their hands.
extension HandPeer {
    /// As the link's initiator, reconciles an empty store with the node to the end (§11: its
    /// have/want lists before each range message). `opened`: the opening message was already
    /// sent (by the test, to see what the node does with it).
    func reconcileFromEmpty(opened: Reconciler? = nil) throws -> Reconciler {
        var reconciler: Reconciler
        if let opened {
            reconciler = opened
        } else {
            reconciler = try Self.emptyInitiator()
            guard case .send(let opening) = try reconciler.initiate() else {
                Issue.record("no opening message")
                return reconciler
            }
            try send(.carry(.reconcile(opening)))
        }
        var read = 0
        while !reconciler.isFinished {
            #expect(eventually { Self.reconciles((try? self.payloads()) ?? []).count > read })
            let replies = Self.reconciles(try payloads())
            guard replies.count > read else { return reconciler }
            for bytes in replies[read...] {
                let step = try reconciler.receive(bytes)
                while let list = reconciler.takeHaveWant() { try send(.carry(.reconcile(list))) }
                if case .send(let b) = step { try send(.carry(.reconcile(b))) }
                if case .finish(let b) = step { try send(.carry(.reconcile(b))) }
            }
            read = replies.count
        }
        return reconciler
    }

    /// An initiator's reconciler over an empty store.
    static func emptyInitiator() throws -> Reconciler {
        try Reconciler(store: try ReconciliationSet([], idLength: CarryLinkMessage.identityLength),
                       role: .initiator, parameters: try .standard(idLength: CarryLinkMessage.identityLength),
                       hash: ReconciliationBLAKE2b())
    }

    static func reconciles(_ payloads: [LinkPayload]) -> [[UInt8]] {
        payloads.compactMap { if case .carry(.reconcile(let b)) = $0 { b } else { nil } }
    }

    static func offered(_ payloads: [LinkPayload]) -> [[UInt8]] {
        payloads.flatMap { payload -> [[UInt8]] in
            if case .carry(.offer(let entries)) = payload { return entries.map(\.identity) }
            return []
        }
    }

    /// As the link's initiator, sends a probe holding the marker of `key` (the peer is that
    /// contact of the node, or a stranger whose random bits hold its marker by chance) and
    /// waits for the node's proof.
    func sendProbe(_ key: ContactLinkKey) throws {
        let probe = ContactRecognition(role: .initiator, handshakeHash: handshakeHash, contacts: [key]).probe()
        try send(.contactProbe(try ContactProbeBody(decoding: probe.dropFirst())))
        #expect(eventually { self.sawProof() })
    }

    /// As the link's initiator, sends its proof for `key` (§5.9 step 2's answer).
    func sendProof(_ key: ContactLinkKey) throws {
        let proof = key.mac(ContactRecognition.proofContext, role: .initiator, handshakeHash: handshakeHash)
        try send(.contactProof(try ContactProofBody(decoding: proof[...])))
    }

    /// Whether the node sent a contact proof on this link.
    func sawProof() -> Bool {
        (try? payloads())?.contains { if case .contactProof = $0 { true } else { false } } == true
    }
}

/// Waits until the node's event thread has handled what was queued before (a round of posts).
func settle(_ node: Node) {
    for _ in 0..<3 {
        let done = Locked(false)
        node.loop.post { done.withLock { $0 = true } }
        _ = eventually { done.withLock { $0 } }
    }
}

/// Alice, carrying for anyone, with contacts Bob and Carol (identities the test holds) and
/// an own carried copy of a message to each.
func aliceWithTwoOwnCopies(_ dir: TempDir, clock: TestClock? = nil) throws -> (Node, Identity, carols: [UInt8], bobs: [UInt8]) {
    let alice = try makeNode(dir, name: "Alice", clock: clock)
    let bob = try Identity(name: "Bob")
    let carol = try Identity(name: "Carol")
    let bobID = try alice.addContact(card: bob.card.text).id
    let carolID = try alice.addContact(card: carol.card.text).id
    _ = try alice.send(to: bobID, text: "to Bob")
    _ = try alice.send(to: carolID, text: "to Carol")
    #expect(try alice.makeOwnCarriedCopies() == 2)
    let recipients = try alice.state.withLock { s in
        try #require(s.store).carriedKeys(nowMs: s.delivery.now, limit: 10).map {
            ($0.id, try #require(s.store).ownCarriedRecipient(packetID: $0.id))
        }
    }
    #expect(Set(recipients.map(\.1)) == [bobID, carolID])
    return (alice, bob, try #require(recipients.first { $0.1 == carolID }?.0), try #require(recipients.first { $0.1 == bobID }?.0))
}
