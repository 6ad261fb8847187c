import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKNode

/// A relay that answers ACCEPTED and stores nothing (PROTOCOL.md §8.3, "Sent is not
/// delivered"; issue 17 §2): after the first missed acknowledgement window the node says
/// so, and tries another route.
@Suite struct LyingRelayTests {
    func isMissNotice(_ e: NodeEvent) -> Bool {
        if case .transportNotice(let n) = e { return n.message.hasPrefix("No delivery confirmation") }
        return false
    }

    @Test func aMissedWindowIsCountedAndNoticed() throws {
        let (pair, clock, notices) = try Pair.onTestClock()
        defer { pair.close() }
        let liar = try MemoryRelay.lying(connectedTo: pair.alice)
        let m = try pair.alice.send(to: pair.bobID, text: "into the void")
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .sent })
        #expect(pair.alice.missedAcknowledgements(route: liar.address) == nil)
        clock.advance(seconds: 61 * 60)
        pair.alice.runDeliveryTimers()
        let notice = notices.wait { isMissNotice($0) }
        #expect(notice.map(isMissNotice) == true)
        #expect(pair.alice.missedAcknowledgements(route: liar.address)?.count == 1)
        // Still sent (the relay did store it, as far as anyone can tell), and posted again.
        #expect(eventually { liar.posts.withLock { $0 } >= 2 })
    }

    @Test func theNextPostGoesThroughAnotherRelay() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        let liar = try MemoryRelay.lying(identifier: [UInt8](repeating: 0xA1, count: 16), connectedTo: pair.alice)
        let honest = MemoryRelay(identifier: [UInt8](repeating: 0xB2, count: 16))
        try honest.connect(pair.alice)    // the second carrier: the liar gets the first post
        try honest.connect(pair.bob)
        let m = try pair.alice.send(to: pair.bobID, text: "take the other road")
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .sent })
        #expect(liar.posts.withLock { $0 } == 1 && honest.posts.withLock { $0 } == 0)
        clock.advance(seconds: 61 * 60)
        pair.alice.runDeliveryTimers()
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == ["take the other road"])
        #expect(liar.posts.withLock { $0 } == 1, "not posted to the lying relay again")
    }

    /// The relay took Bob's ack and lost it, and it is the only relay: the same bytes posted
    /// again would be ACCEPTED and never stored (deletion notes), and Bob answers bytes he has
    /// seen with a receipt only. Sealed again after the window (Node+Reseal.swift), the message
    /// reaches Bob once more, he acknowledges it again, and Alice sees it delivered; Bob keeps
    /// one copy.
    @Test func aLostAckComesBackThroughTheSameRelayOnceTheMessageIsSealedAgain() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        let relay = MemoryRelay()
        relay.state.withLock { $0.acksToDrop = 1 }
        try relay.connect(pair.alice)
        try relay.connect(pair.bob)
        let m = try pair.alice.send(to: pair.bobID, text: "did you get this?")
        #expect(eventually { (try? pair.bob.texts(pair.aliceID)) == ["did you get this?"] })
        #expect(eventually { relay.state.withLock { $0.acksToDrop } == 0 })
        #expect(eventually { relay.state.withLock { !$0.deletedPackets.isEmpty } })
        #expect(try pair.alice.status(of: m.messageID) == .sent)
        clock.advance(seconds: 61 * 60)
        pair.alice.runDeliveryTimers()
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == ["did you get this?"])
    }

    /// Anyone can read an honest relay's identifier from its CHALLENGE: a liar that states
    /// it too must not look like the honest relay (the node would never route around it).
    @Test func aLiarStatingTheHonestRelaysIdentifierIsStillAvoided() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        let shared = [UInt8](repeating: 0xB2, count: 16)
        let liar = try MemoryRelay.lying(identifier: shared, address: "liar.example:4433", connectedTo: pair.alice)
        let honest = MemoryRelay(identifier: shared, address: "honest.example:4433")
        try honest.connect(pair.alice)    // the second carrier: the liar gets the first post
        try honest.connect(pair.bob)
        let m = try pair.alice.send(to: pair.bobID, text: "same name, other road")
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .sent })
        #expect(liar.posts.withLock { $0 } == 1 && honest.posts.withLock { $0 } == 0)
        clock.advance(seconds: 61 * 60)
        pair.alice.runDeliveryTimers()
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == ["same name, other road"])
        #expect(liar.posts.withLock { $0 } == 1, "not posted to the lying relay again")
        // The misses are the liar's, not the honest relay's (diagnostics per configured relay).
        #expect(pair.alice.missedAcknowledgements(route: liar.address)?.count == 1)
        #expect(pair.alice.missedAcknowledgements(route: honest.address) == nil)
    }
}
