import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Carrying between real nodes (docs/PROTOCOL.md §12): Alice → Bob (a stranger to both) →
/// Carol, Alice and Carol never linked.
@Suite(.serialized) struct CarryMeetingTests {
    /// The whole round: Carol gets the message once through Bob, the carried ack comes back
    /// through Bob, Alice's message becomes delivered, and Bob holds nothing afterwards.
    /// `lockBob`: Bob is locked throughout; `reopenBob`: Bob restarts between the links.
    func chain(lockBob: Bool = false, reopenBob: Bool = false) throws {
        let m = try Meeting(["Alice", "Bob", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, aliceAtCarol) = try m.befriend("Alice", "Carol")
        if lockBob { try m["Bob"].lock() }
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Across the shutdown")
        try m["Alice"].makeOwnCarriedCopies()  // the engine's batch after the send (§12.6)
        #expect(m["Alice"].carriedBudgets == [8])

        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 && m["Alice"].carriedBudgets == [4] }
        #expect(m["Bob"].carriedBudgets == [4])
        #expect(m["Alice"].carriedBudgets == [4])
        if reopenBob {
            try m.reopen("Bob")
            if lockBob { try m["Bob"].lock() }
        }

        try m.meet("Bob", "Carol") { m["Carol"].incoming(aliceAtCarol).count == 1 && m["Bob"].carriedBudgets == [4] }
        #expect(m["Carol"].incoming(aliceAtCarol) == ["Across the shutdown"])
        // Bob's copy of the message was purged by Carol's claim; he carries her ack now.
        #expect(m["Bob"].carriedBudgets == [4])
        #expect(try m["Alice"].status(of: sent.messageID) != .delivered)

        try m.meet("Bob", "Alice") {
            (try? m["Alice"].status(of: sent.messageID)) == .delivered && m["Bob"].carriedCount == 0
        }
        #expect(try m["Alice"].status(of: sent.messageID) == .delivered)
        #expect(m["Bob"].carriedCount == 0)
        #expect(m["Alice"].carriedCount == 0)
        #expect(m["Carol"].incoming(aliceAtCarol).count == 1)
        let alice = try m["Alice"].carryStatistics()
        #expect(alice.acksThroughCarriers == 1)
        #expect(try m["Carol"].carryStatistics().messagesDeliveredThroughCarriers == 1)
        if !reopenBob { #expect(try m["Bob"].carryStatistics().packetsHandedOn >= 2) }
    }

    @Test func aMessageCrossesAStrangerAndItsAckComesBack() throws { try chain() }

    @Test func aLockedStrangerCarries() throws { try chain(lockBob: true) }

    @Test func aStrangerRestartedBetweenLinksStillHandsItOn() throws { try chain(reopenBob: true) }

    @Test func aLockedRecipientFindsItsMailAfterUnlock() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, aliceAtCarol) = try m.befriend("Alice", "Carol")
        _ = try m["Alice"].send(to: carolAtAlice, text: "Wait for me")
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 }
        try m["Carol"].lock()
        // Locked, Carol cannot tell her mail: she takes it as a carrier would (budget ≥ 2).
        try m.meet("Bob", "Carol") { m["Carol"].carriedCount == 1 }
        try m["Carol"].unlock(pin: testPIN)
        #expect(eventually { m["Carol"].incoming(aliceAtCarol) == ["Wait for me"] })
        #expect(eventually { m["Carol"].carriedBudgets == [8] })  // only her ack is left
    }

    @Test func modeOffCarriesNothing() throws {
        let m = try Meeting(["Alice", "Bob"])
        defer { m.finish() }
        let (bobAtAlice, aliceAtBob) = try m.befriend("Alice", "Bob")
        try m["Bob"].setCarry(mode: .off)
        _ = try m["Alice"].send(to: bobAtAlice, text: "Not for carrying")
        // Bob is Alice's contact here, so the message itself goes over the link: wait for it.
        try m.meet("Alice", "Bob") { m["Bob"].incoming(aliceAtBob).count == 1 }
        #expect(m["Bob"].carriedCount == 0)
        try m["Alice"].setCarry(mode: .off)
        #expect(m["Alice"].carriedCount == 0)
        _ = try m["Alice"].send(to: bobAtAlice, text: "No copy")
        #expect(m["Alice"].carriedCount == 0)
    }

    @Test func modeContactsCarriesOnlyForContacts() throws {
        let m = try Meeting(["Alice", "Bob", "Carol", "Dave"])
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        try m.befriend("Alice", "Dave")
        try m["Bob"].setCarry(mode: .contactsOnly)
        try m["Dave"].setCarry(mode: .contactsOnly)
        _ = try m["Alice"].send(to: carolAtAlice, text: "Only friends carry")
        // Bob is a stranger to Alice: in contacts mode he takes nothing from her.
        try m.meet("Alice", "Bob") 
        #expect(m["Bob"].carriedCount == 0)
        #expect(m["Alice"].carriedBudgets == [8])
        // Dave is Alice's contact: he carries.
        try m.meet("Alice", "Dave") { m["Dave"].carriedCount == 1 }
        #expect(m["Dave"].carriedBudgets == [4])
    }

    @Test func budgetsHalveAndWaitPhaseCopiesGoOnlyToTheirRecipient() throws {
        let m = try Meeting(["Alice", "B1", "B2", "B3", "B4", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, aliceAtCarol) = try m.befriend("Alice", "Carol")
        _ = try m["Alice"].send(to: carolAtAlice, text: "Spray and wait")
        try m.meet("Alice", "B1") { m["B1"].carriedBudgets == [4] && m["Alice"].carriedBudgets == [4] }
        try m.meet("B1", "B2") { m["B2"].carriedBudgets == [2] && m["B1"].carriedBudgets == [2] }
        try m.meet("B1", "B3") { m["B3"].carriedBudgets == [1] && m["B1"].carriedBudgets == [1] }
        #expect(m["B1"].carriedBudgets == [1])
        #expect(m["B3"].carriedBudgets == [1])
        // B1 is in the wait phase: a stranger does not get it …
        try m.meet("B1", "B4") 
        #expect(m["B4"].carriedCount == 0)
        #expect(m["B1"].carriedBudgets == [1])
        // … its recipient, who asks for it, does.
        try m.meet("B1", "Carol") { m["Carol"].incoming(aliceAtCarol).count == 1 }
        #expect(m["Carol"].incoming(aliceAtCarol) == ["Spray and wait"])
    }

    @Test func aMessageArrivingDirectlyAndCarriedIsDeliveredOnce() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, aliceAtCarol) = try m.befriend("Alice", "Carol")
        let events = EventRecorder()
        events.attach(to: m["Carol"])
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Twice over")
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 }
        // Directly: the routed message and Alice's carried copy both reach Carol.
        try m.meet("Alice", "Carol") { (try? m["Alice"].status(of: sent.messageID)) == .delivered }
        #expect(m["Carol"].incoming(aliceAtCarol) == ["Twice over"])
        // Then Bob's copy: refused as purged (Carol remembers the claim), and Bob's purged.
        try m.meet("Bob", "Carol") { m["Bob"].carriedCount == 0 }
        #expect(m["Bob"].carriedCount == 0)
        #expect(m["Carol"].incoming(aliceAtCarol) == ["Twice over"])
        m.settle("Carol")
        let received = events.all.filter { if case .messageReceived = $0 { return true } else { return false } }
        #expect(received.count == 1)
    }

    @Test func carryActivityIsReported() throws {
        let m = try Meeting(["Alice", "Bob"])
        defer { m.finish() }
        let events = EventRecorder()
        events.attach(to: m["Bob"])
        let carolCard = try Identity(name: "Carol").card.text
        let carol = try m["Alice"].addContact(card: carolCard).id
        _ = try m["Alice"].send(to: carol, text: "Hello")
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 }
        let activity = events.wait { if case .carryActivity(let s) = $0 { return s.packetsTaken == 1 } else { return false } }
        #expect(activity != nil)
        #expect(try m["Bob"].carryStatistics().packetsHeld == 1)
    }
}

extension CarryMeetingTests {
    /// The other order: the carried copy first (through Bob), then the routed message over a
    /// direct link: one message, one event.
    @Test func aMessageCarriedThenArrivingDirectlyIsDeliveredOnce() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, aliceAtCarol) = try m.befriend("Alice", "Carol")
        let events = EventRecorder()
        events.attach(to: m["Carol"])
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Carried, then direct")
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 }
        try m.meet("Bob", "Carol") { m["Carol"].incoming(aliceAtCarol).count == 1 }
        #expect(try m["Alice"].status(of: sent.messageID) == .pending)
        // Alice's routed message is still in her outbox: it goes over the direct link too.
        try m.meet("Alice", "Carol") { (try? m["Alice"].status(of: sent.messageID)) == .delivered }
        #expect(try m["Alice"].status(of: sent.messageID) == .delivered)
        #expect(m["Carol"].incoming(aliceAtCarol) == ["Carried, then direct"])
        m.settle("Carol")
        let received = events.all.filter { if case .messageReceived = $0 { return true } else { return false } }
        #expect(received.count == 1)
    }
}

extension CarryMeetingTests {
    /// The record of an own carried copy (message ID → identity, claim) goes with the
    /// contact; the copy itself stays to spread (it is a stranger's packet to carriers).
    @Test func ownCopyRecordsGoWithTheContact() throws {
        let m = try Meeting(["Alice", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Before the goodbye")
        try m["Alice"].makeOwnCarriedCopies()  // the engine's batch after the send (§12.6)
        func record() -> Store.OwnCarried? {
            m["Alice"].state.withLock { s in (try? s.store?.ownCarried(messageID: sent.messageID.bytes)) ?? nil }
        }
        let own = try #require(record())
        #expect(own.contactID == carolAtAlice)
        #expect(m["Alice"].carriedCount == 1)
        try m["Alice"].deleteContact(carolAtAlice)
        #expect(record() == nil)
        #expect(m["Alice"].carriedCount == 1)
    }

    /// Delivered by the routed path alone: the own copy is deleted and its claim remembered
    /// (so a copy a stranger offers later is refused).
    @Test func aDirectAckDeletesTheOwnCopyAndPublishesItsClaim() throws {
        let m = try Meeting(["Alice", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Straight there")
        try m["Alice"].makeOwnCarriedCopies()  // the engine's batch after the send (§12.6)
        let claimHash = try #require(m["Alice"].state.withLock { s in
            (try? s.store?.ownCarried(messageID: sent.messageID.bytes)).flatMap { $0 }.map { PurgeClaim.hash($0.claim) }
        })
        try m.meet("Alice", "Carol") { (try? m["Alice"].status(of: sent.messageID)) == .delivered }
        #expect(m["Alice"].carriedCount == 0)
        let purged = m["Alice"].state.withLock { s in (try? s.store?.isPurged(claimHash: claimHash, nowMs: s.delivery.now)) ?? nil }
        #expect(purged == true)
    }
}

extension CarryMeetingTests {
    /// The claim a recipient publishes for a message carried to it (it never held the packet)
    /// outlives a flood of random claims (§10.9: own claims are trimmed last), so it keeps
    /// answering offers of the delivered packet with it.
    @Test func aRecipientsPublishedClaimOutlivesAFloodOfRandomClaims() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, aliceAtCarol) = try m.befriend("Alice", "Carol")
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Remember me")
        try m["Alice"].makeOwnCarriedCopies()  // the engine's batch after the send (§12.6)
        let claimHash = try #require(m["Alice"].state.withLock { s in
            (try? s.store?.ownCarried(messageID: sent.messageID.bytes)).flatMap { $0 }.map { PurgeClaim.hash($0.claim) }
        })
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 }
        try m.meet("Bob", "Carol") { m["Carol"].incoming(aliceAtCarol).count == 1 }
        let kept = m["Carol"].state.withLock { s -> Bool? in
            guard let store = s.store else { return nil }
            let later = s.delivery.now + 1_000
            for _ in 0..<3 {
                let record = try? PurgeRecord(claims: (0..<255).map { _ in PurgeClaim.random() })
                _ = try? store.purgeCarried(#require(record), nowMs: later, policy: CarryPolicy(maxPurgeRecords: 4))
            }
            return try? store.isPurged(claimHash: claimHash, nowMs: later)
        }
        #expect(kept == true)
    }
}

extension CarryMeetingTests {
    /// The engine's timer sweeps what expired: carried packets (others' and one's own) and the
    /// records of own copies.
    @Test func theTimerSweepsExpiredCarrying() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Lost in time")
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 }
        m.clock.advance(seconds: 15 * 86_400)
        for name in ["Alice", "Bob"] { m[name].runDeliveryTimers() }
        // Rows, not the live listing (which never shows an expired packet).
        #expect(try m["Bob"].carryStatistics().packetsHeld == 0)
        #expect(try m["Alice"].carryStatistics().packetsHeld == 0)
        let own = m["Alice"].state.withLock { s in (try? s.store?.ownCarried(messageID: sent.messageID.bytes)) ?? nil }
        #expect(own == nil)
    }
}

extension CarryMeetingTests {
    /// `carryActivity` at most once per link per minute, and once more when the link closes:
    /// a meeting that takes several packets in separate batches tells the app twice at most.
    @Test func carryActivityIsRateLimitedPerLink() throws {
        let m = try Meeting(["Alice", "Bob"])
        defer { m.finish() }
        let events = EventRecorder()
        events.attach(to: m["Bob"])
        let carol = try m["Alice"].addContact(card: try Identity(name: "Carol").card.text).id
        for i in 0..<4 { _ = try m["Alice"].send(to: carol, text: "Hello \(i)") }
        let pipe = try m.link("Alice", "Bob") { m["Bob"].carriedCount == 4 }
        m.settle("Alice", "Bob")
        func activity() -> Int { events.all.filter { if case .carryActivity = $0 { return true } else { return false } }.count }
        #expect(activity() == 1)
        pipe.close()
        m.settle("Alice", "Bob")
        #expect(eventually { activity() == 2 })
        let last = events.all.last { if case .carryActivity = $0 { return true } else { return false } }
        if case .carryActivity(let s)? = last { #expect(s.packetsTaken == 4) } else { Issue.record("no event") }
    }
}

extension CarryMeetingTests {
    /// The setting survives a restart (a user who turned carrying off must not find it on
    /// again); a reset brings the default back.
    @Test func theCarrySettingSurvivesARestart() throws {
        let m = try Meeting(["Bob"])
        defer { m.finish() }
        let limits = CarryLimits(maxPackets: 100, maxBytes: 4 << 20)
        try m["Bob"].setCarry(mode: .off, limits: limits)
        try m.reopen("Bob")
        #expect(try m["Bob"].carryMode() == .off)
        #expect(try m["Bob"].carryStatistics().limits == limits)
        try m["Bob"].setCarry(mode: .contactsOnly)
        try m.reopen("Bob")
        #expect(try m["Bob"].carryMode() == .contactsOnly)
        try m["Bob"].reset(confirm: true)
        #expect(try m["Bob"].carryMode() == .anyone)
        #expect(try m["Bob"].carryStatistics().limits == .standard)
    }
}

extension CarryMeetingTests {
    /// Two meetings at once: budget promised to a copy awaiting its answer on another link
    /// is not given again. (The other link is simulated: a session whose copy of 4 is still
    /// unanswered.)
    @Test func budgetPromisedOnAnotherLinkIsNotGivenTwice() throws {
        let m = try Meeting(["Alice", "Bob"])
        defer { m.finish() }
        let carol = try m["Alice"].addContact(card: try Identity(name: "Carol").card.text).id
        let sent = try m["Alice"].send(to: carol, text: "One budget")
        try m["Alice"].makeOwnCarriedCopies()  // the engine's batch after the send (§12.6)
        let packet = try #require(m["Alice"].ownCarriedPacketID(sent.messageID))
        m["Alice"].state.withLock { s in
            var other = CarrySession(carries: true)
            other.awaiting[packet] = (given: 4, keptHop: 8, size: 200)
            s.delivery.carry.sessions[999_999] = other
        }
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 && m["Alice"].carriedBudgets == [6] }
        // Of the 4 not promised, Bob got half; Alice keeps 8 − 2 (4 still promised elsewhere).
        #expect(m["Bob"].carriedBudgets == [2])
        #expect(m["Alice"].carriedBudgets == [6])
    }
}
