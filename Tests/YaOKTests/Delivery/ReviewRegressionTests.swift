import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Regressions for the attacker review of the delivery engine: each test reproduces a
/// finding and checks the fixed behaviour.
@Suite struct ReviewRegressionTests {
    /// A message to someone who has not added the sender yet is not sent on their link (a
    /// stranger link, §5.9), so it stays queued, and the next link after the recipient adds
    /// the sender delivers it.
    @Test func aRefusedMessageIsRetriedAndArrivesOnceTheSenderIsAdded() throws {
        let clock = TestClock()
        let dirA = TempDir(), dirB = TempDir()
        defer { dirA.remove(); dirB.remove() }
        let alice = try makeNode(dirA, name: "Alice", clock: clock)
        let bob = try makeNode(dirB, name: "Bob", clock: clock)
        defer { alice.close(); bob.close() }
        let bobID = try alice.addContact(card: bob.profile().text).id
        let pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        let m = try alice.send(to: bobID, text: "hello before you added me")
        #expect(eventually { pipe.initiator.peerIsContact == false })
        usleep(100_000)
        #expect(alice.inflightCount == 0)
        #expect(try alice.status(of: m.messageID) == .pending)
        let aliceID = try bob.addContact(card: alice.profile().text).id
        let again = try MemoryPipe(alice, bob)
        defer { again.close() }
        #expect(eventually { (try? alice.status(of: m.messageID)) == .delivered })
        #expect(try bob.texts(aliceID) == ["hello before you added me"])
    }

    /// A locked node holds at most `maxHeldPackets` (and bytes); beyond, no receipt.
    @Test func aLockedNodeHoldsABoundedBacklog() throws {
        let pair = try Pair()
        defer { pair.close() }
        let bobKey = try pair.bob.profile().publicIdentity.encryptionKey
        let mallory = try Identity(name: "Mallory")
        try pair.bob.lock()
        let body = Array(String(repeating: "j", count: 10_000).utf8)
        for _ in 0..<(Node.maxHeldBytes / 10_000 + 50) {
            let (_, p) = try SealedMessage.seal(body, from: mallory, to: bobKey, createdMs: Clock.milliseconds())
            try pair.bob.injectRouted(p)
        }
        let (count, bytes) = try pair.bob.state.withLock { try $0.store!.heldTotals() }
        #expect(bytes <= Node.maxHeldBytes && count <= Node.maxHeldPackets)
        #expect(count < Node.maxHeldBytes / 10_000 + 50)
    }

    /// A stranger cannot flood the security log: routed packets on a stranger link are
    /// refused before they are opened (§5.9), unlogged, and a link that keeps sending them is
    /// closed.
    @Test func strangersCannotFloodTheSecurityLog() throws {
        let pair = try Pair()
        defer { pair.close() }
        let mallory = try Identity(name: "Mallory")
        let stranger = try HandPeer(pair.bob, nodeRole: .responder)
        defer { stranger.link.close() }
        for _ in 0..<100 { try stranger.send(.packet(try pair.bob.receiveablePacket(from: mallory))) }
        #expect(eventually { pair.bob.state.withLock { $0.delivery.links.isEmpty } })  // Bob closed the link
        let logged = try pair.bob.securityEvents(limit: 1000).filter { $0.kind == .unknownSender }.count
        #expect(logged == 0)
    }

    /// Only the link a packet is in flight on can confirm it: a stranger's receipt for a
    /// pending message's ID changes nothing.
    @Test func aReceiptFromAnotherLinkIsIgnored() throws {
        let pair = try Pair()
        defer { pair.close() }
        let dirM = TempDir()
        defer { dirM.remove() }
        let mallory = try makeNode(dirM, name: "Mallory")
        defer { mallory.close() }
        let m = try pair.alice.send(to: pair.bobID, text: "for Bob")
        let pipe = try MemoryPipe(pair.alice, mallory)
        defer { pipe.close() }
        #expect(eventually { pair.alice.state.withLock { s in s.delivery.links.values.contains { $0.isOpen } } })
        try mallory.withEngine { engine, _, _ in
            guard let id = engine.links.keys.first else { return }
            try engine.sendOnLink(.receipt([m.messageID]), on: id)
        }
        usleep(200_000)
        #expect(try pair.alice.status(of: m.messageID) == .pending)
        let bobPipe = try MemoryPipe(pair.alice, pair.bob)
        defer { bobPipe.close() }
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
    }

    /// Clocks 20 minutes apart: the packet is dropped (no receipt), the link stays up, and
    /// diagnostics say how far off the clock is; once the clocks agree the message goes.
    @Test func clockSkewDropsThePacketNotTheLink() throws {
        let aliceClock = TestClock(), bobClock = TestClock()
        aliceClock.advance(seconds: 20 * 60)
        let dirA = TempDir(), dirB = TempDir()
        defer { dirA.remove(); dirB.remove() }
        let alice = try makeNode(dirA, name: "Alice", clock: aliceClock)
        let bob = try makeNode(dirB, name: "Bob", clock: bobClock)
        defer { alice.close(); bob.close() }
        let bobID = try alice.addContact(card: bob.profile().text).id
        let aliceID = try bob.addContact(card: alice.profile().text).id
        let pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        #expect(eventually { bob.linkIsOpen(to: aliceID) && alice.linkIsOpen(to: bobID) })
        let m = try alice.send(to: bobID, text: "from the future")
        #expect(eventually { bob.state.withLock { $0.delivery.lastClockSkew != nil } })
        #expect(bob.linkIsOpen(to: aliceID))
        #expect(try alice.status(of: m.messageID) == .pending)
        #expect(try bob.diagnostics().serialized.contains("clock_skew_ms"))
        bobClock.advance(seconds: 20 * 60)
        aliceClock.advance(seconds: RetrySchedule.attemptTimeoutMs / 1000)
        alice.runDeliveryTimers()
        aliceClock.advance(seconds: 60)
        alice.runDeliveryTimers()
        #expect(eventually { (try? alice.status(of: m.messageID)) == .delivered })
    }

    /// A link that floods the node is refused and closed; the node's other links go on.
    @Test func aFloodingLinkIsClosed() throws {
        let pair = try Pair()
        defer { pair.close() }
        let flooder = try pair.bob.openLink(transport: "radio", role: .responder, mtu: 100, send: { _ in })
        var refused = false
        // Garbage as fast as it can go: the link is refused (overrun, or closed for what it
        // sent) long before a million units.
        for _ in 0..<1_000_000 where !refused {
            refused = !flooder.receive([1, 4, 0, 0])
        }
        #expect(refused)
        #expect(eventually { pair.bob.state.withLock { $0.delivery.links[flooder.id] == nil } })
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        let m = try pair.alice.send(to: pair.bobID, text: "still here")
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
    }

    /// The data directory is made the owner's alone.
    @Test func theDataDirectoryIsMadePrivate() throws {
        let dir = TempDir()
        defer { dir.remove() }
        #expect(mkdir(dir.path, 0o777) == 0)
        #expect(chmod(dir.path, 0o777) == 0)
        let node = try makeNode(dir)
        node.close()
        var info = stat()
        #expect(stat(dir.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
    }
}
