import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A node carrying for contacts only meets a contact whose first meeting payload comes before
/// its proof (docs/PROTOCOL.md §5.9, "Ready, settled and recognised"): the contact's probe left
/// the node out (it holds more than 256 cards), so it took the node for a stranger and,
/// carrying for anyone, opened its meeting at once. The node, which sent its proof for the
/// contact's probe, holds that payload until the contact's proof verifies, and the meeting is
/// a contact's; without a proof, it starts as a stranger's after `Node.proofWaitMs`.
@Suite struct ContactsOnlyLateProofTests {
    /// Alice (contacts only, the link's responder) holds her own copies of a message to Bob
    /// and one to Carol. Bob's reconciliation opens before his proof: once the proof verifies,
    /// Alice reconciles her store (Bob learns of both copies) and offers Carol's.
    @Test func aContactsReconciliationBeforeItsProofGetsAContactsMeeting() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // A clock that stands still: the node's own 3 s timer, however late the test runs
        // (ThreadSanitizer), finds nothing overdue.
        let (alice, bob, carolsCopy, _) = try aliceWithTwoOwnCopies(dir, clock: TestClock())
        defer { alice.close() }
        try alice.setCarry(mode: .contactsOnly)
        let peer = try HandPeer(alice, nodeRole: .responder)
        defer { peer.link.close() }
        let key = try ContactLinkKey(own: bob, peer: try alice.profile().publicIdentity)
        let probe = ContactRecognition(role: .initiator, handshakeHash: peer.handshakeHash, contacts: [key]).probe()
        try peer.send(.contactProbe(try ContactProbeBody(decoding: probe.dropFirst())))
        #expect(eventually { peer.sawProof() })

        // Bob's meeting opens before his proof: Alice answers nothing yet.
        var reconciler = try HandPeer.emptyInitiator()
        guard case .send(let opening) = try reconciler.initiate() else { Issue.record("no opening message"); return }
        try peer.send(.carry(.reconcile(opening)))
        settle(alice)
        #expect(HandPeer.reconciles(try peer.payloads()).isEmpty, "a meeting started before the contact's proof")

        let proof = key.mac(ContactRecognition.proofContext, role: .initiator, handshakeHash: peer.handshakeHash)
        try peer.send(.contactProof(try ContactProofBody(decoding: proof[...])))
        #expect(eventually { peer.link.peerIsContact == true })
        reconciler = try peer.reconcileFromEmpty(opened: reconciler)
        #expect(reconciler.want.count == 2, "Alice reconciled as \(reconciler.want.isEmpty ? "an empty store (a stranger's meeting)" : "?")")
        #expect(eventually { !HandPeer.offered((try? peer.payloads()) ?? []).isEmpty })
        settle(alice)
        #expect(HandPeer.offered(try peer.payloads()) == [carolsCopy])
    }

    /// A peer whose probe holds one of Alice's contacts' markers by chance (a false positive:
    /// it never answers her proof) still gets a meeting, a stranger's, once `Node.proofWaitMs`
    /// has passed: Alice reconciles as an empty store and offers nothing.
    @Test func withoutAProofTheHeldMeetingStartsAsAStrangersInTime() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        let (alice, bob, _, _) = try aliceWithTwoOwnCopies(dir, clock: clock)
        defer { alice.close() }
        try alice.setCarry(mode: .contactsOnly)
        let peer = try HandPeer(alice, nodeRole: .responder)
        defer { peer.link.close() }
        // The stranger's random bits happen to hold Bob's marker: a probe made with his key.
        let key = try ContactLinkKey(own: bob, peer: try alice.profile().publicIdentity)
        let probe = ContactRecognition(role: .initiator, handshakeHash: peer.handshakeHash, contacts: [key]).probe()
        try peer.send(.contactProbe(try ContactProbeBody(decoding: probe.dropFirst())))
        #expect(eventually { peer.sawProof() })
        var reconciler = try HandPeer.emptyInitiator()
        guard case .send(let opening) = try reconciler.initiate() else { Issue.record("no opening message"); return }
        try peer.send(.carry(.reconcile(opening)))
        settle(alice)
        // The node's timer is set for the end of the wait (or earlier), not left to the next
        // keepalive.
        let due = alice.state.withLock { $0.delivery.timerDue }
        #expect(due != nil && due! <= clock.now + Node.proofWaitMs, "timer due \(due.map { $0 - clock.now } ?? -1) ms from now")
        clock.advance(milliseconds: Node.proofWaitMs - 1)
        alice.runDeliveryTimers()
        settle(alice)
        #expect(HandPeer.reconciles(try peer.payloads()).isEmpty, "the meeting started before the wait was over")

        clock.advance(milliseconds: 1)
        alice.runDeliveryTimers()
        reconciler = try peer.reconcileFromEmpty(opened: reconciler)
        #expect(reconciler.isFinished)
        #expect(reconciler.want.isEmpty, "a stranger's meeting shows nothing carried")
        settle(alice)
        #expect(HandPeer.offered(try peer.payloads()).isEmpty)
        #expect(peer.link.peerIsContact != true)
    }

    /// Past `Node.maxHeldMeetingPayloads` the meeting starts at once, and the payloads held
    /// go first, in order: Alice answers the reconciliation opening that was held.
    @Test func aPayloadPastTheCapStartsTheMeetingWithTheHeldOnesFirst() throws {
        try heldOpening(shows: 0) { alice, peer in
            for i in 0..<Node.maxHeldMeetingPayloads {
                try peer.send(.carry(.taken([[UInt8](repeating: UInt8(i), count: CarryLinkMessage.identityLength)])))
            }
        }
    }

    /// Carrying no longer for contacts only (`setCarry`), nothing waits for a proof: the held
    /// meeting starts at once, its payloads first, and carries for anyone (both copies shown).
    @Test func leavingContactsOnlyStartsAHeldMeetingAtOnce() throws {
        try heldOpening(shows: 2) { alice, _ in try alice.setCarry(mode: .anyone) }
    }

    /// Alice (contacts only, clock standing still) holds a peer's reconciliation opening (its
    /// probe drew her proof; no proof of its own comes); after `then`, she has answered it,
    /// reconciling a store of `shows` packets (0: a stranger's meeting in contacts only).
    private func heldOpening(shows: Int, then: (Node, HandPeer) throws -> Void) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (alice, bob, _, _) = try aliceWithTwoOwnCopies(dir, clock: TestClock())
        defer { alice.close() }
        try alice.setCarry(mode: .contactsOnly)
        let peer = try HandPeer(alice, nodeRole: .responder)
        defer { peer.link.close() }
        let key = try ContactLinkKey(own: bob, peer: try alice.profile().publicIdentity)
        let probe = ContactRecognition(role: .initiator, handshakeHash: peer.handshakeHash, contacts: [key]).probe()
        try peer.send(.contactProbe(try ContactProbeBody(decoding: probe.dropFirst())))
        #expect(eventually { peer.sawProof() })
        var reconciler = try HandPeer.emptyInitiator()
        guard case .send(let opening) = try reconciler.initiate() else { Issue.record("no opening message"); return }
        try peer.send(.carry(.reconcile(opening)))
        settle(alice)
        #expect(HandPeer.reconciles(try peer.payloads()).isEmpty, "the opening was not held")

        try then(alice, peer)
        #expect(eventually { !HandPeer.reconciles((try? peer.payloads()) ?? []).isEmpty }, "the held opening is still held")
        reconciler = try peer.reconcileFromEmpty(opened: reconciler)
        #expect(reconciler.isFinished)
        #expect(reconciler.want.count == shows)
        #expect(alice.state.withLock { $0.delivery.links.values.allSatisfy { $0.heldMeeting.isEmpty } })
    }
}
