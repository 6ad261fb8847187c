import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKNode

/// A carrier's answer the store could not record (a full disk, an I/O error): the
/// transport that brought it gets no error back, so the node says so itself, once a
/// session, and posts again after `Node.failedSweepRetryMs` (as a failed sweep tries
/// again). The answers were taken with `try?`: the message sat in flight until its attempt
/// ended, and nobody heard why.
@Suite struct CarrierStoreFailureTests {
    private static func isFailureNotice(_ e: NodeEvent) -> Bool {
        if case .transportNotice(let n) = e {
            return n.message.hasPrefix("Could not record the relay's answer") && n.retryAfterMs == Node.failedSweepRetryMs
        }
        return false
    }

    /// Every change to an outbox row fails, as on a full disk.
    private static func failOutboxWrites(_ node: Node, _ failing: Bool) throws {
        try node.withDatabase { db in
            try db.execute(failing
                ? "CREATE TEMP TRIGGER injected_failure BEFORE UPDATE ON outbox BEGIN SELECT RAISE(ABORT, 'injected'); END"
                : "DROP TRIGGER injected_failure")
        }
    }

    /// Alice's message `text`, posted to a carrier that records its posts and answers only
    /// when the test says. `posts`: how many times it was posted. The caller closes the pair.
    private static func posted(_ text: String) throws
        -> (pair: Pair, clock: TestClock, events: EventRecorder, carrier: Carrier, sent: MessageID, posts: () -> Int) {
        let (pair, clock, events) = try Pair.onTestClock()
        let (carrier, posted) = try pair.alice.recordingCarrier()
        let sent = try pair.alice.send(to: pair.bobID, text: text).messageID
        let posts = { posted.withLock { $0 }.filter { $0 == sent }.count }
        #expect(eventually { posts() == 1 })
        return (pair, clock, events, carrier, sent, posts)
    }

    private static func timerDue(_ node: Node) throws -> Int64? {
        try node.withStore { _, s in s.delivery.timerDue }
    }

    @Test func anAcceptanceNotRecordedIsNoticedOnceAndPostedAgainSoon() throws {
        let (pair, clock, events, carrier, sent, posts) = try Self.posted("stored, not recorded")
        defer { pair.close() }

        try Self.failOutboxWrites(pair.alice, true)
        carrier.accepted([sent])
        #expect(events.wait(for: Self.isFailureNotice) != nil)
        #expect(try pair.alice.status(of: sent) == .pending)
        #expect(try Self.timerDue(pair.alice) == clock.now + Node.failedSweepRetryMs)

        // Posted again at that retry, and refused again: no second notice this session.
        clock.advance(milliseconds: Node.failedSweepRetryMs)
        pair.alice.runDeliveryTimers()
        #expect(eventually { posts() == 2 })
        carrier.accepted([sent])
        #expect(eventually { (try? Self.timerDue(pair.alice)) == clock.now + Node.failedSweepRetryMs })
        #expect(events.all.filter(Self.isFailureNotice).count == 1)

        // The trouble gone, the next acceptance is recorded.
        try Self.failOutboxWrites(pair.alice, false)
        clock.advance(milliseconds: Node.failedSweepRetryMs)
        pair.alice.runDeliveryTimers()
        #expect(eventually { posts() == 3 })
        carrier.accepted([sent])
        #expect(try pair.alice.status(of: sent) == .sent)
    }

    @Test func aRefusalNotRecordedIsNoticedAndPostedAgainSoon() throws {
        let (pair, clock, events, carrier, sent, posts) = try Self.posted("refused, not recorded")
        defer { pair.close() }

        try Self.failOutboxWrites(pair.alice, true)
        carrier.refused(sent, error: YaOKError(.linkFailed, "The relay could not store it"))
        #expect(events.wait(for: Self.isFailureNotice) != nil)
        #expect(try Self.timerDue(pair.alice) == clock.now + Node.failedSweepRetryMs)
        try Self.failOutboxWrites(pair.alice, false)
        clock.advance(milliseconds: Node.failedSweepRetryMs)
        pair.alice.runDeliveryTimers()
        #expect(eventually { posts() == 2 })
    }

    /// A failed sweep's retry does not push back a deadline that comes sooner: the timer
    /// fired (so none was set), the sweep failed at the store, and a message posted 25 s
    /// before, its attempt still running, must be given up on 5 s later, not 10 s later at
    /// the retry (`retryAt` was taken alone).
    @Test func aSoonerDeadlineIsNotPushedBackByTheRetry() throws {
        let (pair, clock, _, _, sent, _) = try Self.posted("its attempt running")
        defer { pair.close() }
        #expect(eventually { (try? pair.alice.withStore { _, s in s.delivery.inflight[sent] != nil }) == true })
        let attemptEnds = clock.now + RetrySchedule.attemptTimeoutMs
        clock.advance(milliseconds: RetrySchedule.attemptTimeoutMs - 5_000)

        // Every outbox read fails, as on an I/O error: the sweep stops at its first.
        try pair.alice.withDatabase { db in try db.execute("ALTER TABLE outbox RENAME TO outbox_gone") }
        pair.alice.runDeliveryTimers()
        #expect(try Self.timerDue(pair.alice) == attemptEnds)
        #expect(attemptEnds < clock.now + Node.failedSweepRetryMs)
        try pair.alice.withDatabase { db in try db.execute("ALTER TABLE outbox_gone RENAME TO outbox") }
    }

    /// A deadline already past when the sweep failed (the attempt ended; giving up on it is
    /// what failed) waits for the retry too: taken as the next time, the timer would fire
    /// at once, the sweep fail again, and so on, a busy loop for as long as the store fails.
    @Test func aDeadlineAlreadyPastWaitsForTheRetry() throws {
        let (pair, clock, _, _, first, _) = try Self.posted("its attempt over")
        defer { pair.close() }
        let second = try pair.alice.send(to: pair.bobID, text: "this one's too").messageID
        #expect(eventually {
            (try? pair.alice.withStore { _, s in s.delivery.inflight[first] != nil && s.delivery.inflight[second] != nil }) == true
        })
        clock.advance(milliseconds: RetrySchedule.attemptTimeoutMs + 1_000)

        try pair.alice.withDatabase { db in try db.execute("ALTER TABLE outbox RENAME TO outbox_gone") }
        pair.alice.runDeliveryTimers()
        // One still in flight, its deadline past: the sweep stopped at giving up on the other.
        #expect(try pair.alice.withStore { _, s in s.delivery.inflight.earliestDeadline.map { $0 < clock.now } } == true)
        #expect(try Self.timerDue(pair.alice) == clock.now + Node.failedSweepRetryMs)
        try pair.alice.withDatabase { db in try db.execute("ALTER TABLE outbox_gone RENAME TO outbox") }
    }

    /// Bob, carrying, in a meeting with a relay (§12.9) whose commands go nowhere, his
    /// events recorded. The caller finishes the meeting.
    private static func relayMeeting() throws -> (Meeting, EventRecorder, Carrier) {
        let m = try Meeting(["Bob"])
        let events = EventRecorder()
        events.attach(to: m["Bob"])
        let carrier = try m["Bob"].openCarrier(transport: "relay", route: "relay.test:4433", relay: Sodium.randomBytes(32),
                                               callbacks: CarrierCallbacks(post: { _ in }, release: { _ in },
                                                                           mailboxesChanged: {}, closed: { _ in }, carry: { _ in }))
        return (m, events, carrier)
    }

    /// A relay's meeting payload (§12.9) goes through the same report: here an offer whose
    /// quota read fails.
    @Test func aMeetingPayloadNotTakenIsNoticed() throws {
        let (m, events, carrier) = try Self.relayMeeting()
        defer { m.finish() }
        try m["Bob"].withDatabase { db in try db.execute("ALTER TABLE carry_quota RENAME TO carry_quota_gone") }
        carrier.receiveCarry(.offer([CarryOffer(identity: Sodium.randomBytes(16), routingTag: RoutingTag(value: 7),
                                                copyBudget: 1, claimHash: Sodium.randomBytes(16))]))
        #expect(events.wait(for: Self.isFailureNotice) != nil)
    }

    /// A meeting payload the relay got wrong (a reconciliation message the reconciler
    /// refuses, §11) is the relay's doing, not the store's: the exchange ends, and the app
    /// is not told that an answer could not be recorded (a hostile relay had it said at
    /// every session).
    @Test func aMalformedMeetingPayloadIsNoStoreFailure() throws {
        let (m, events, carrier) = try Self.relayMeeting()
        defer { m.finish() }
        let reconciling = { m["Bob"].state.withLock { $0.delivery.carry.sessions[carrier.id]?.reconciler != nil } }
        #expect(reconciling())
        carrier.receiveCarry(.reconcile([0xFF, 0xFF, 0xFF, 0xFF]))
        #expect(!reconciling())  // refused: the exchange ended
        settle(m["Bob"])  // the events that section emitted have been handled
        #expect(!events.all.contains(where: Self.isFailureNotice))
    }
}
