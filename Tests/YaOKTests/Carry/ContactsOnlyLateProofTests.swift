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
///
/// Each test runs Alice on a clock that stands still but for its own steps: the node's own
/// 3 s timer, however late the test runs (ThreadSanitizer), finds nothing overdue.
@Suite struct ContactsOnlyLateProofTests {
    /// Alice (contacts only, the link's responder) holds her own copies of a message to Bob
    /// and one to Carol. Bob's reconciliation opens before his proof: once the proof verifies,
    /// Alice reconciles her store (Bob learns of both copies) and offers Carol's.
    @Test func aContactsReconciliationBeforeItsProofGetsAContactsMeeting() throws {
        let held = try HeldOpening()
        defer { held.close() }
        try held.peer.sendProof(held.key)
        #expect(eventually { held.peer.link.peerIsContact == true })
        let reconciler = try held.peer.reconcileFromEmpty(opened: held.reconciler)
        #expect(reconciler.want.count == 2, "Alice reconciled as \(reconciler.want.isEmpty ? "an empty store (a stranger's meeting)" : "?")")
        #expect(eventually { !HandPeer.offered((try? held.peer.payloads()) ?? []).isEmpty })
        settle(held.alice)
        #expect(HandPeer.offered(try held.peer.payloads()) == [held.carolsCopy])
    }

    /// A peer whose probe holds one of Alice's contacts' markers by chance (a false positive:
    /// it never answers her proof) still gets a meeting, a stranger's, once `Node.proofWaitMs`
    /// has passed: Alice reconciles as an empty store and offers nothing.
    @Test func withoutAProofTheHeldMeetingStartsAsAStrangersInTime() throws {
        let held = try HeldOpening()
        defer { held.close() }
        let (alice, peer, clock) = (held.alice, held.peer, held.clock)
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
        let reconciler = try peer.reconcileFromEmpty(opened: held.reconciler)
        #expect(reconciler.isFinished)
        #expect(reconciler.want.isEmpty, "a stranger's meeting shows nothing carried")
        settle(alice)
        #expect(HandPeer.offered(try peer.payloads()).isEmpty)
        #expect(peer.link.peerIsContact != true)
    }

    /// Past `Node.maxHeldMeetingPayloads` the meeting starts at once, a stranger's, and the
    /// payloads held go first, in order: Alice answers the reconciliation opening held.
    @Test func aPayloadPastTheCapStartsTheMeetingWithTheHeldOnesFirst() throws {
        let held = try HeldOpening()
        defer { held.close() }
        for i in 0..<Node.maxHeldMeetingPayloads {
            try held.peer.send(.carry(.taken([[UInt8](repeating: UInt8(i), count: CarryLinkMessage.identityLength)])))
        }
        try held.expectAnswered(showing: 0)
    }

    /// Fewer payloads than the cap, but more bytes than `Node.maxHeldMeetingBytes` (full
    /// offers of made-up packets, ~10 KB each): the meeting starts as a stranger's too.
    @Test func bytesPastTheCapStartTheMeetingWithTheHeldOnesFirst() throws {
        let held = try HeldOpening()
        defer { held.close() }
        let offers = (0..<7).map { _ in
            (0..<CarryLinkMessage.maxEntries).map { _ in
                CarryOffer(identity: Sodium.randomBytes(16), routingTag: RoutingTag(value: 7), copyBudget: 8,
                           claimHash: Sodium.randomBytes(16))
            }
        }
        #expect(offers.count + 1 < Node.maxHeldMeetingPayloads)
        #expect(try offers.reduce(0) { $0 + (try CarryLinkMessage.offer($1).encodeBody().count) } > Node.maxHeldMeetingBytes)
        for offer in offers { try held.peer.send(.carry(.offer(offer))) }
        try held.expectAnswered(showing: 0)
    }

    /// Carrying no longer for contacts only (`setCarry`), nothing waits for a proof: the held
    /// meeting starts at once, its payloads first, and carries for anyone (both copies shown).
    @Test func leavingContactsOnlyStartsAHeldMeetingAtOnce() throws {
        let held = try HeldOpening()
        defer { held.close() }
        try held.alice.setCarry(mode: .anyone)
        try held.expectAnswered(showing: 2)
    }

    /// Carrying turned off, there is no meeting: the held payloads are dropped at once, not
    /// kept for a proof (or 3 s) to start a meeting that is no more.
    @Test func turningCarryingOffDropsTheHeldPayloads() throws {
        let held = try HeldOpening()
        defer { held.close() }
        try held.alice.setCarry(mode: .off)
        #expect(held.alice.state.withLock { $0.delivery.links.values.allSatisfy { $0.heldMeeting.isEmpty && $0.heldMeetingUntil == nil } })
        settle(held.alice)
        #expect(HandPeer.reconciles(try held.peer.payloads()).isEmpty)
    }
}

/// Alice (contacts only, on a clock that stands still) with two own copies, and a hand-driven
/// peer whose probe drew her proof for Bob: the peer's reconciliation opening is held.
private struct HeldOpening {
    let dir = TempDir()
    let clock = TestClock()
    let alice: Node
    let carolsCopy: [UInt8]
    let peer: HandPeer
    let key: ContactLinkKey
    let reconciler: Reconciler

    init() throws {
        let bob: Identity
        (alice, bob, carolsCopy, _) = try aliceWithTwoOwnCopies(dir, clock: clock)
        try alice.setCarry(mode: .contactsOnly)
        peer = try HandPeer(alice, nodeRole: .responder)
        key = try ContactLinkKey(own: bob, peer: try alice.profile().publicIdentity)
        try peer.sendProbe(key)
        var reconciler = try HandPeer.emptyInitiator()
        guard case .send(let opening) = try reconciler.initiate() else { throw YaOKError(.internal, "no opening message") }
        try peer.send(.carry(.reconcile(opening)))
        settle(alice)
        #expect(HandPeer.reconciles(try peer.payloads()).isEmpty, "a meeting started before the peer's proof")
        self.reconciler = reconciler
    }

    /// Alice answered the held opening, and reconciles with the peer a store of `shows` packets
    /// (0: a stranger's meeting in contacts only); nothing stays held.
    func expectAnswered(showing shows: Int) throws {
        #expect(eventually { !HandPeer.reconciles((try? peer.payloads()) ?? []).isEmpty }, "the held opening is still held")
        let finished = try peer.reconcileFromEmpty(opened: reconciler)
        #expect(finished.isFinished)
        #expect(finished.want.count == shows)
        #expect(alice.state.withLock { $0.delivery.links.values.allSatisfy { $0.heldMeeting.isEmpty } })
    }

    func close() {
        peer.link.close()
        alice.close()
        dir.remove()
    }
}
