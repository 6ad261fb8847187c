import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A node never offers its own copy of a message to that message's recipient (docs/PROTOCOL.md
/// §12.3 step 2), even when its meeting starts before it knows who the peer is: carrying for
/// anyone, the meeting starts on the peer's probe, before the peer's proof (§5.9). Own copies
/// wait for recognition to settle; then the others' are offered.
@Suite struct OwnCopyRecognitionTests {
    /// Alice (the link's responder, carrying for anyone) has an own copy of a message to Bob
    /// and one to Carol. Bob, driven by hand, reconciles before he proves who he is: Alice
    /// offers nothing own then; once his proof verifies, Carol's copy, never Bob's.
    @Test func ownCopiesWaitForThePeersProofAndNoneGoesToItsRecipient() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (alice, bob, carolsCopy, _) = try aliceWithTwoOwnCopies(dir)
        defer { alice.close() }
        let peer = try HandPeer(alice, nodeRole: .responder)
        defer { peer.link.close() }
        let key = try ContactLinkKey(own: bob, peer: try alice.profile().publicIdentity)
        let probe = ContactRecognition(role: .initiator, handshakeHash: peer.handshakeHash, contacts: [key]).probe()
        try peer.send(.contactProbe(try ContactProbeBody(decoding: probe.dropFirst())))
        // Alice answers the probe with her proof and starts her meeting (for anyone).
        #expect(eventually { (try? peer.payloads())?.contains { if case .contactProof = $0 { true } else { false } } == true })

        // Bob reconciles from an empty store: Alice learns he lacks both copies.
        let reconciler = try reconcileFromEmpty(peer)
        settle(alice)
        #expect(reconciler.want.count == 2, "the control: Bob's reconciliation says he lacks both copies")
        #expect(offered(try peer.payloads()).isEmpty, "an own copy offered before the peer is known")

        // Bob proves who he is: Carol's copy is offered now, his own never.
        let proof = key.mac(ContactRecognition.proofContext, role: .initiator, handshakeHash: peer.handshakeHash)
        try peer.send(.contactProof(try ContactProofBody(decoding: proof[...])))
        #expect(eventually { !offered((try? peer.payloads()) ?? []).isEmpty })
        settle(alice)
        #expect(offered(try peer.payloads()) == [carolsCopy])
        #expect(peer.link.peerIsContact == true)
    }

    /// A contact whose probe leaves this node out (it holds more than 256 cards) is taken for a
    /// stranger until its proof comes: own copies offered meanwhile, its own included, are
    /// not handed to it once it is known to be their recipient, whatever it asks for.
    @Test func anOwnCopyOfferedBeforeThePeerWasKnownIsNotHandedToItsRecipient() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (alice, bob, carolsCopy, bobsCopy) = try aliceWithTwoOwnCopies(dir)
        defer { alice.close() }
        let peer = try HandPeer(alice, nodeRole: .initiator)
        defer { peer.link.close() }
        // A probe with none of Alice's contacts' markers: settled, a stranger. Alice, the
        // link's initiator, opens the reconciliation; Bob's empty store lacks both copies.
        let probe = ContactRecognition(role: .responder, handshakeHash: peer.handshakeHash, contacts: []).probe()
        try peer.send(.contactProbe(try ContactProbeBody(decoding: probe.dropFirst())))
        var reconciler = try Reconciler(store: try ReconciliationSet([], idLength: CarryLinkMessage.identityLength),
                                        role: .responder, parameters: try .standard(idLength: CarryLinkMessage.identityLength),
                                        hash: ReconciliationBLAKE2b())
        var read = 0
        while offered((try? peer.payloads()) ?? []).count < 2 {
            #expect(eventually { reconciles((try? peer.payloads()) ?? []).count > read || offered((try? peer.payloads()) ?? []).count >= 2 })
            let messages = reconciles(try peer.payloads())
            guard messages.count > read else { continue }
            for bytes in messages[read...] {
                switch try reconciler.receive(bytes) {
                case .send(let b), .finish(let b): try peer.send(.carry(.reconcile(b)))
                case .finished, .budgetExhausted, .idle: break
                }
            }
            read = messages.count
        }
        #expect(Set(offered(try peer.payloads())) == [carolsCopy, bobsCopy], "the control: a stranger is offered both")

        // Bob's proof (its probe left Alice out) comes now; then he asks for both.
        let key = try ContactLinkKey(own: bob, peer: try alice.profile().publicIdentity)
        let proof = key.mac(ContactRecognition.proofContext, role: .responder, handshakeHash: peer.handshakeHash)
        try peer.send(.contactProof(try ContactProofBody(decoding: proof[...])))
        #expect(eventually { peer.link.peerIsContact == true })
        try peer.send(.carry(.request([bobsCopy, carolsCopy])))
        #expect(eventually { !handed((try? peer.payloads()) ?? []).isEmpty })
        settle(alice)
        let handedOver = handed(try peer.payloads())
        #expect(handedOver == [carolsCopy], "handed \(handedOver.map { $0 == carolsCopy ? "Carol's" : $0 == bobsCopy ? "Bob's" : "other" })")
    }

    /// Locked, Alice still recognises Bob (the contact link keys are kept, §5.9) but not which
    /// of her contacts he is (the directory needs the keys): his own copy is offered with
    /// Carol's, the only way it can reach him before the unlock (no routed message goes to a
    /// link whose contact is not known). PROTOCOL.md §12.3 step 2 says so.
    @Test func aLockedNodeOffersARecognisedContactItsOwnCopyToo() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (alice, bob, carolsCopy, bobsCopy) = try aliceWithTwoOwnCopies(dir)
        defer { alice.close() }
        let key = try ContactLinkKey(own: bob, peer: try alice.profile().publicIdentity)
        try alice.lock()
        let peer = try HandPeer(alice, nodeRole: .responder)
        defer { peer.link.close() }
        let probe = ContactRecognition(role: .initiator, handshakeHash: peer.handshakeHash, contacts: [key]).probe()
        try peer.send(.contactProbe(try ContactProbeBody(decoding: probe.dropFirst())))
        #expect(eventually { (try? peer.payloads())?.contains { if case .contactProof = $0 { true } else { false } } == true })
        let proof = key.mac(ContactRecognition.proofContext, role: .initiator, handshakeHash: peer.handshakeHash)
        try peer.send(.contactProof(try ContactProofBody(decoding: proof[...])))
        #expect(eventually { peer.link.peerIsContact == true })

        _ = try reconcileFromEmpty(peer)
        #expect(eventually { offered((try? peer.payloads()) ?? []).count >= 2 })
        settle(alice)
        #expect(Set(offered(try peer.payloads())) == [carolsCopy, bobsCopy])
    }

    /// The hand-driven peer, as the link's initiator, reconciles an empty store with the node
    /// to the end (§11: its have/want lists before each range message).
    private func reconcileFromEmpty(_ peer: HandPeer) throws -> Reconciler {
        var reconciler = try Reconciler(store: try ReconciliationSet([], idLength: CarryLinkMessage.identityLength),
                                        role: .initiator, parameters: try .standard(idLength: CarryLinkMessage.identityLength),
                                        hash: ReconciliationBLAKE2b())
        guard case .send(let opening) = try reconciler.initiate() else {
            Issue.record("no opening message")
            return reconciler
        }
        try peer.send(.carry(.reconcile(opening)))
        var read = 0
        while !reconciler.isFinished {
            #expect(eventually { reconciles((try? peer.payloads()) ?? []).count > read })
            let replies = reconciles(try peer.payloads())
            guard replies.count > read else { return reconciler }
            for bytes in replies[read...] {
                let step = try reconciler.receive(bytes)
                while let list = reconciler.takeHaveWant() { try peer.send(.carry(.reconcile(list))) }
                if case .send(let b) = step { try peer.send(.carry(.reconcile(b))) }
                if case .finish(let b) = step { try peer.send(.carry(.reconcile(b))) }
            }
            read = replies.count
        }
        return reconciler
    }

    private func handed(_ payloads: [LinkPayload]) -> [[UInt8]] {
        payloads.compactMap { if case .carry(.carried(let packet)) = $0 { packet.identity } else { nil } }
    }

    /// Alice, carrying for anyone, with contacts Bob and Carol (identities the test holds) and
    /// an own carried copy of a message to each.
    private func aliceWithTwoOwnCopies(_ dir: TempDir) throws -> (Node, Identity, carols: [UInt8], bobs: [UInt8]) {
        let alice = try makeNode(dir, name: "Alice")
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

    private func reconciles(_ payloads: [LinkPayload]) -> [[UInt8]] {
        payloads.compactMap { if case .carry(.reconcile(let b)) = $0 { b } else { nil } }
    }

    private func offered(_ payloads: [LinkPayload]) -> [[UInt8]] {
        payloads.flatMap { payload -> [[UInt8]] in
            if case .carry(.offer(let entries)) = payload { return entries.map(\.identity) }
            return []
        }
    }

    /// Waits until the node's event thread has handled what was queued before (a round of posts).
    private func settle(_ node: Node) {
        for _ in 0..<3 {
            let done = Locked(false)
            node.loop.post { done.withLock { $0 = true } }
            _ = eventually { done.withLock { $0 } }
        }
    }
}
