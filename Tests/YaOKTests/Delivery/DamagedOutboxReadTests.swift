import Testing
import Foundation
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// Every read of one outbox row by the engine checks it the same way
/// (DeliveryEngine+DamagedOutbox): a row that fails its check is taken out and its message
/// `failed`, instead of the read's error ending what it was part of — a retry the app asked
/// for, a link's receipt, a carrier's rate-limit answer, the sweep's missed windows.
@Suite struct DamagedOutboxReadTests {
    /// The row of `id` gets another expiry (a column its MAC covers), as someone with the
    /// file, or a bad disk, would change it.
    private static func damage(_ id: MessageID, of node: Node) throws {
        try node.withDatabase { db in try db.execute("UPDATE outbox SET expires_ms = expires_ms + 1 WHERE packet_id = X'\(id)'") }
    }

    private static func tampered(_ node: Node) throws -> Int {
        try node.securityEvents().filter { $0.kind == .outboxTampered }.count
    }

    /// A retry threw `corruptStore` at the row, for ever: the message could not be sent
    /// again. Now the row goes and the text is sealed afresh.
    @Test func aRetrySealsAMessageWhoseRowIsDamagedAfresh() throws {
        let pair = try Pair()
        defer { pair.close() }
        let sent = try pair.alice.send(to: pair.bobID, text: "once more").messageID
        try Self.damage(sent, of: pair.alice)
        #expect(try pair.alice.retry(sent).status == .pending)
        #expect(try Self.tampered(pair.alice) == 1)
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { (try? pair.alice.status(of: sent)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == ["once more"])
    }

    /// A receipt for a packet no longer in flight (its attempt ended before the receipt
    /// came) reads the row with its check; it threw, and failed the drain it came in.
    @Test func aReceiptForADamagedRowNotInFlightTakesItOut() throws {
        let pair = try Pair()
        defer { pair.close() }
        let sent = try pair.alice.send(to: pair.bobID, text: "taken").messageID
        try Self.damage(sent, of: pair.alice)
        try pair.alice.withEngine { engine, store, keys in try engine.confirmReceipt(sent, store, keys) }
        #expect(try pair.alice.status(of: sent) == .failed)
        #expect(try Self.tampered(pair.alice) == 1)
    }

    /// A carrier's rate-limit answer for a message whose row was damaged meanwhile threw
    /// after pausing the carrier: the row stayed, its message `pending` with nothing to
    /// send it until some later pump.
    @Test func aRateLimitAnswerForADamagedRowTakesItOut() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (carrier, posted) = try pair.alice.recordingCarrier()
        let sent = try pair.alice.send(to: pair.bobID, text: "slow down").messageID
        #expect(eventually { posted.withLock { $0 }.contains(sent) })
        try Self.damage(sent, of: pair.alice)
        carrier.refused(sent, error: YaOKError(.rateLimited), retryAfterMs: 60_000)
        #expect(eventually { (try? pair.alice.status(of: sent)) == .failed })
        #expect(try Self.tampered(pair.alice) == 1)
    }

    /// The sweep's missed acknowledgement windows (CarrierAckWatch) read each message's
    /// row: one damaged row threw, the sweep ended there, and neither the notice nor the
    /// others' new seals came (the next try 10 s later, with that window already dropped).
    @Test func aMissedWindowOverADamagedRowStillNoticesAndSealsTheRestAgain() throws {
        let (pair, clock, notices) = try Pair.onTestClock()
        defer { pair.close() }
        let liar = try MemoryRelay.lying(connectedTo: pair.alice)
        let ids = try ["damaged", "lost"].map { try pair.alice.send(to: pair.bobID, text: $0).messageID }
        #expect(eventually { ids.allSatisfy { (try? pair.alice.status(of: $0)) == .sent } })
        let postsBefore = liar.posts.withLock { $0 }
        try Self.damage(ids[0], of: pair.alice)
        clock.advance(seconds: 61 * 60)
        pair.alice.runDeliveryTimers()
        let notice = notices.wait {
            if case .transportNotice(let n) = $0 { return n.message.hasPrefix("No delivery confirmation for 1 message") }
            return false
        }
        #expect(notice != nil)
        #expect(try pair.alice.status(of: ids[0]) == .failed)
        #expect(try Self.tampered(pair.alice) == 1)
        // The other one is posted again.
        #expect(eventually { liar.posts.withLock { $0 } > postsBefore })
    }
}

/// A damaged row goes with its security event or not at all: the removal committed alone,
/// a failure writing the event (a full disk) lost it, and the row, gone, was never
/// reported again.
@Suite struct DamagedOutboxEventTests {
    @Test func aRowIsNotTakenOutWithoutItsSecurityEvent() throws {
        let pair = try Pair()
        defer { pair.close() }
        let sent = try pair.alice.send(to: pair.bobID, text: "kept until reported").messageID
        try pair.alice.withDatabase { db in
            try db.execute("UPDATE outbox SET expires_ms = expires_ms + 1 WHERE packet_id = X'\(sent)'")
            try db.execute("CREATE TEMP TRIGGER injected_failure BEFORE INSERT ON security_events BEGIN SELECT RAISE(ABORT, 'injected'); END")
        }
        #expect(throws: (any Error).self) { try pair.alice.retry(sent) }
        #expect(try pair.alice.withDatabase { db in try db.rows("SELECT count(*) FROM outbox") { $0.int(0) } } == [1])
        // The trouble gone, the next read takes it out and reports it.
        try pair.alice.withDatabase { db in try db.execute("DROP TRIGGER injected_failure") }
        _ = try pair.alice.retry(sent)
        #expect(try pair.alice.securityEvents().filter { $0.kind == .outboxTampered }.count == 1)
    }
}
