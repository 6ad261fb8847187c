import Foundation
import Synchronization
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// What a transport needs from a link: the responder's keepalive on completion (PROTOCOL.md
/// §5.2), so each side has received two units once the handshake is done, and whether the
/// handshake has completed (to spare authenticated channels).
@Suite struct LinkKeepaliveTests {
    @Test func theResponderConfirmsCompletion() throws {
        let pair = try Pair()
        defer { pair.close() }
        let sent = Locked<[[UInt8]]>([])
        let link = try pair.bob.openLink(transport: "test", role: .responder, mtu: 65_535,
                                         send: { unit in sent.withLock { $0.append(unit) } })
        defer { link.close() }
        let initiator = try AnonymousLinkHandshake(role: .initiator)
        link.receive(try #require(try initiator.start()))
        #expect(eventually { sent.withLock { $0.count } >= 1 })
        // Mid-handshake: not authenticated, and nothing more is sent.
        #expect(!link.isAuthenticated)
        let m3 = try initiator.receive(try handshakePayload(sent.withLock { $0[0] }))
        let session = try #require(m3.session)
        #expect(sent.withLock { $0.count } == 1)

        link.receive(try #require(m3.packet))
        // Its contact probe first (§5.9), then the keepalive.
        #expect(eventually { sent.withLock { $0.count } >= 3 })
        #expect(link.isAuthenticated)
        guard case .contactProbe = try session.open(sent.withLock { $0[1] }) else {
            Issue.record("the responder's first link packet is not its probe")
            return
        }
        #expect(try session.open(sent.withLock { $0[2] }) == .keepalive)

        link.close()
        #expect(!link.isAuthenticated)
    }
}

/// Every link gets a keepalive after 20 s with nothing sent (PROTOCOL.md §5.4), whatever its
/// transport: a radio an app brings through `Node.openLink` has no keepalive of its own, and
/// the far side's transport (Bluetooth LE: 90 s) closes a link it hears nothing on.
@Suite struct IdleKeepaliveTests {
    @Test func anIdleLinkGetsAKeepaliveFromTheDeliveryTimer() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        // A class, not a Mutex captured by the two nodes' event threads: ThreadSanitizer
        // reported the captured Mutex's access as a race (its exclusivity check, not the lock).
        let small = Locked(0)
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        pipe.drop { unit in
            if unit.count == 29 { small.withLock { $0 += 1 } }  // a keepalive link packet
            return false
        }
        #expect(eventually { pair.alice.state.withLock { $0.delivery.links.values.contains { $0.isOpen } } })
        #expect(eventually { pair.bob.state.withLock { $0.delivery.links.values.contains { $0.isOpen } } })
        usleep(100_000)
        let before = small.withLock { $0 }
        clock.advance(seconds: 10)
        pair.alice.runDeliveryTimers()
        usleep(100_000)
        #expect(small.withLock { $0 } == before)  // not yet idle long enough
        clock.advance(seconds: 11)
        pair.alice.runDeliveryTimers()
        pair.bob.runDeliveryTimers()
        #expect(eventually { small.withLock { $0 } == before + 2 })
        let due = pair.alice.state.withLock { $0.delivery.timerDue }
        #expect((due ?? 0) > clock.now)
    }
}

/// A transport asks whether a link's peer is a contact to give contacts way over strangers
/// (PROTOCOL.md §9.2); the answer holds while the node is locked too (from digests kept
/// across the lock), or a locked node could not tell them apart.
@Suite struct PeerIsContactTests {
    @Test func contactsAndStrangersAreToldApartWhileLocked() throws {
        let pair = try Pair()
        defer { pair.close() }
        let dir = TempDir()
        defer { dir.remove() }
        let carol = try makeNode(dir, name: "Carol")
        defer { carol.close() }
        _ = try carol.addContact(card: pair.alice.profile().text)
        let friend = try MemoryPipe(pair.alice, pair.bob)
        defer { friend.close() }
        let stranger = try MemoryPipe(pair.alice, carol)
        defer { stranger.close() }
        #expect(eventually { friend.initiator.peerIsContact == true && stranger.initiator.peerIsContact == false })
        try pair.alice.lock()
        #expect(friend.initiator.peerIsContact == true)
        #expect(stranger.initiator.peerIsContact == false)
    }

    /// A transport asks while the node's lock is busy (held by another thread, which may be
    /// waiting for the transport's own lock): the link answers from what the node told it,
    /// never from the node's locked state. Before, both questions took the node's lock, so
    /// asking while it is held (here: from inside it) never returned.
    @Test func aLinkAnswersWithoutTheNodesLock() throws {
        let pair = try Pair()
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { pipe.responder.peerIsContact == true })
        let answers = pair.bob.state.withLock { _ in [pipe.responder.isAuthenticated, pipe.responder.peerIsContact] }
        #expect(answers == [true, true])
    }

    /// The answer follows the contacts: a recognised contact deleted no longer counts, and a
    /// closed link knows nothing. A stranger added while linked stays a stranger on this link
    /// (recognition runs once, when the link opens, §5.9): its next link recognises it.
    @Test func theAnswerFollowsContactChanges() throws {
        let dirA = TempDir(), dirC = TempDir()
        defer { dirA.remove(); dirC.remove() }
        let alice = try makeNode(dirA, name: "Alice")
        defer { alice.close() }
        let carol = try makeNode(dirC, name: "Carol")
        defer { carol.close() }
        let before = try MemoryPipe(alice, carol)
        defer { before.close() }
        #expect(eventually { before.initiator.peerIsContact == false })
        let added = try alice.addContact(card: carol.profile().text)
        _ = try carol.addContact(card: alice.profile().text)
        #expect(before.initiator.peerIsContact == false)
        let pipe = try MemoryPipe(alice, carol)
        defer { pipe.close() }
        #expect(eventually { pipe.initiator.peerIsContact == true })
        try alice.deleteContact(added.id)
        #expect(pipe.initiator.peerIsContact == false)
        pipe.initiator.close()
        #expect(!pipe.initiator.isAuthenticated && pipe.initiator.peerIsContact == nil)
    }
}
