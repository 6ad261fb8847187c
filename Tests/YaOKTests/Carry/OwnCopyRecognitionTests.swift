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
        // Alice answers the probe with her proof and starts her meeting (for anyone).
        try peer.sendProbe(key)

        // Bob reconciles from an empty store: Alice learns he lacks both copies.
        let reconciler = try peer.reconcileFromEmpty()
        settle(alice)
        #expect(reconciler.want.count == 2, "the control: Bob's reconciliation says he lacks both copies")
        #expect(HandPeer.offered(try peer.payloads()).isEmpty, "an own copy offered before the peer is known")

        // Bob proves who he is: Carol's copy is offered now, his own never.
        try peer.sendProof(key)
        #expect(eventually { !HandPeer.offered((try? peer.payloads()) ?? []).isEmpty })
        settle(alice)
        #expect(HandPeer.offered(try peer.payloads()) == [carolsCopy])
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
        while HandPeer.offered((try? peer.payloads()) ?? []).count < 2 {
            #expect(eventually { HandPeer.reconciles((try? peer.payloads()) ?? []).count > read || HandPeer.offered((try? peer.payloads()) ?? []).count >= 2 })
            let messages = HandPeer.reconciles(try peer.payloads())
            guard messages.count > read else { continue }
            for bytes in messages[read...] {
                switch try reconciler.receive(bytes) {
                case .send(let b), .finish(let b): try peer.send(.carry(.reconcile(b)))
                case .finished, .budgetExhausted, .idle: break
                }
            }
            read = messages.count
        }
        #expect(Set(HandPeer.offered(try peer.payloads())) == [carolsCopy, bobsCopy], "the control: a stranger is offered both")

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
        try peer.sendProbe(key)
        try peer.sendProof(key)
        #expect(eventually { peer.link.peerIsContact == true })

        _ = try peer.reconcileFromEmpty()
        #expect(eventually { HandPeer.offered((try? peer.payloads()) ?? []).count >= 2 })
        settle(alice)
        #expect(Set(HandPeer.offered(try peer.payloads())) == [carolsCopy, bobsCopy])
    }

    private func handed(_ payloads: [LinkPayload]) -> [[UInt8]] {
        payloads.compactMap { if case .carry(.carried(let packet)) = $0 { packet.identity } else { nil } }
    }
}
