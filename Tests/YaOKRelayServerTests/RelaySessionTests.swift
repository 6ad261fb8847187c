import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The session's rules (PROTOCOL.md §8.3) over decoded frames, with no sockets and no TLS.
final class RelaySessionTests: XCTestCase {
    let binding = [UInt8](repeating: 7, count: 32)
    var configuration = RelayConfiguration()
    var limiter = RateLimiter(messagesPerHour: 3, acksPerHour: 30)
    var revoked = Set<[UInt8]>()
    var now = Clock.milliseconds()

    func context() -> RelaySession.Context {
        let revoked = self.revoked
        return RelaySession.Context(nowMs: now, isRevoked: { revoked.contains($0) }, limiter: limiter, configuration: configuration)
    }

    let relay = [UInt8](repeating: 0x5A, count: 16)

    func newSession() -> RelaySession { RelaySession(nonce: Sodium.randomBytes(32), binding: binding, relay: relay) }

    func auth(_ s: RelaySession, _ key: SigningKey, binding: [UInt8]? = nil) -> [RelaySession.Action] {
        let sig = key.sign(RelaySignedData.auth(nonce: s.nonce, binding: binding ?? self.binding))
        return s.receive(RelayFrame.auth(pseudonym: key.publicKey, signature: sig).encode(), context())
    }

    func ready(_ key: SigningKey? = nil) throws -> (RelaySession, SigningKey) {
        let s = newSession()
        let key = try key ?? SigningKey.random()
        _ = auth(s, key)
        XCTAssertEqual(s.phase, .ready)
        return (s, key)
    }

    func endCode(_ actions: [RelaySession.Action]) -> RelayErrorFrame.Code? {
        for a in actions { if case .end(let e) = a { return e.code } }
        return nil
    }

    func errorCode(_ actions: [RelaySession.Action]) -> RelayErrorFrame? {
        for a in actions { if case .send(.error(let e)) = a { return e } }
        return nil
    }

    func testAuthAnswersReadyWithLifetimeAndLimits() throws {
        let s = newSession()
        let key = try SigningKey.random()
        let actions = auth(s, key)
        XCTAssertEqual(actions, [.authenticated(pseudonym: key.publicKey),
                                 .send(.ready(sessionLifetimeSeconds: 3600, ratePerHour: 100, remaining: 3))])
        XCTAssertEqual(s.pseudonym, key.publicKey)
    }

    func testBadAuthSignatureEndsTheSession() throws {
        let s = newSession()
        let key = try SigningKey.random()
        let bad = s.receive(RelayFrame.auth(pseudonym: key.publicKey, signature: [UInt8](repeating: 1, count: 64)).encode(), context())
        XCTAssertEqual(endCode(bad), .authFailed)
        XCTAssertEqual(s.phase, .ended)
        XCTAssertEqual(s.receive(RelayFrame.ping(request: 1).encode(), context()), [])
    }

    func testAuthSignedForAnotherBindingIsRefused() throws {
        let s = newSession()
        XCTAssertEqual(endCode(auth(s, try SigningKey.random(), binding: [UInt8](repeating: 8, count: 32))), .authFailed)
    }

    func testRevokedPseudonymCannotLogIn() throws {
        let key = try SigningKey.random()
        revoked.insert(key.publicKey)
        XCTAssertEqual(endCode(auth(newSession(), key)), .revoked)
    }

    func testOnlyAuthBeforeReady() throws {
        let s = newSession()
        XCTAssertEqual(endCode(s.receive(RelayFrame.ping(request: 1).encode(), context())), .malformed)
    }

    func testGarbageAndServerFramesAreMalformed() throws {
        let (s, _) = try ready()
        XCTAssertEqual(endCode(s.receive([0x77, 1, 2], context())), .malformed)
        let (s2, _) = try ready()
        XCTAssertEqual(endCode(s2.receive(RelayFrame.pong(request: 1).encode(), context())), .malformed)
    }

    func testSubscribeCountsNewMailboxesAndChecksSignatures() throws {
        let (s, key) = try ready()
        let boxes = try (0..<3).map { _ in try SigningKey.random() }
        let signed = RelaySignedData.subscribe(nonce: s.nonce, binding: binding, pseudonym: key.publicKey)
        let proofs = try boxes.map { try MailboxProof(mailbox: mailbox($0), signature: $0.sign(signed)) }
        XCTAssertEqual(s.receive(RelayFrame.subscribe(proofs).encode(), context()),
                       [.subscribed(boxes.map(mailbox)), .send(.subscribed(count: 3))])
        XCTAssertEqual(s.receive(RelayFrame.subscribe([proofs[0]]).encode(), context()), [.send(.subscribed(count: 0))])
        // Signed for another pseudonym: refused, and the session ends.
        let other = try SigningKey.random()
        let fresh = try SigningKey.random()
        let wrong = fresh.sign(RelaySignedData.subscribe(nonce: s.nonce, binding: binding, pseudonym: other.publicKey))
        XCTAssertEqual(endCode(s.receive(RelayFrame.subscribe([try MailboxProof(mailbox: mailbox(fresh), signature: wrong)]).encode(), context())),
                       .notSubscribed)
    }

    func testSubscriptionCap() throws {
        configuration.maxSubscriptions = 2
        let (s, key) = try ready()
        let signed = RelaySignedData.subscribe(nonce: s.nonce, binding: binding, pseudonym: key.publicKey)
        let proofs = try (0..<3).map { _ -> MailboxProof in
            let k = try SigningKey.random()
            return try MailboxProof(mailbox: mailbox(k), signature: k.sign(signed))
        }
        XCTAssertEqual(endCode(s.receive(RelayFrame.subscribe(proofs).encode(), context())), .notSubscribed)
    }

    func testResentSubscribeIsNotVerifiedAgainAndRunsOutOfBudget() throws {
        // One valid frame of 64 proofs, sent again and again (the attack: 64 Ed25519
        // verifications per 6 KB frame on the loop thread, forever).
        let (s, key) = try ready()
        let signed = RelaySignedData.subscribe(nonce: s.nonce, binding: binding, pseudonym: key.publicKey)
        let proofs = try (0..<64).map { _ -> MailboxProof in
            let k = try SigningKey.random()
            return try MailboxProof(mailbox: mailbox(k), signature: k.sign(signed))
        }
        let frame = RelayFrame.subscribe(proofs).encode()
        XCTAssertEqual(s.receive(frame, context()).last, .send(.subscribed(count: 64)))
        XCTAssertEqual(s.verifications, 64)
        // 4,096 proofs per session, duplicates included: 63 more copies are answered...
        for _ in 1..<64 { XCTAssertEqual(s.receive(frame, context()), [.send(.subscribed(count: 0))]) }
        XCTAssertEqual(s.verifications, 64, "mailboxes already subscribed are not verified again")
        // ...and the 65th ends the session.
        XCTAssertEqual(endCode(s.receive(frame, context())), .notSubscribed)
        XCTAssertEqual(s.phase, .ended)
        XCTAssertEqual(s.receive(frame, context()), [])
        XCTAssertEqual(s.verifications, 64)
    }

    func testPostChecksPacketTimeAndLifetime() throws {
        let (s, _) = try ready()
        let box = mailbox(try SigningKey.random())
        func post(_ packet: [UInt8]) -> [RelaySession.Action] {
            s.receive(signedPost(request: 9, mailbox: box, packet: packet).encode(), context())
        }
        XCTAssertEqual(errorCode(post([1, 2, 3]))?.code, .malformed)
        XCTAssertEqual(errorCode(post(try makePacket(createdMs: now - 3_600_000, lifetimeMinutes: 10)))?.code, .expired)
        XCTAssertEqual(errorCode(post(try makePacket(createdMs: now + 16 * 60_000)))?.code, .expired)
        XCTAssertEqual(errorCode(post(try makePacket(lifetimeMinutes: 7 * 24 * 60 + 1)))?.code, .malformed)
        XCTAssertEqual(errorCode(post(try makePacket(lifetimeMinutes: 7 * 24 * 60)))?.code, nil)
        let packet = try makePacket()
        let actions = post(packet)
        guard case .store(let p)? = actions.first else { return XCTFail("\(actions)") }
        XCTAssertEqual(p.request, 9)
        XCTAssertEqual(p.post.messageID, try messageID(of: packet))
        XCTAssertEqual(p.post.expiresAtMs, try RoutedHeader.parse(packet).header.expiresAtMs)
    }

    func testRateLimitCountsMessagesWithRetryAfterAndAcksSeparately() throws {
        let (s, _) = try ready()
        let box = mailbox(try SigningKey.random())
        func post(_ packet: [UInt8]) -> [RelaySession.Action] {
            s.receive(signedPost(request: 1, mailbox: box, packet: packet).encode(), context())
        }
        for _ in 0..<3 { XCTAssertNil(errorCode(post(try makePacket()))) }
        let limited = errorCode(post(try makePacket()))
        XCTAssertEqual(limited?.code, .rateLimited)
        XCTAssertEqual(limited?.retryAfterSeconds, 3600)
        XCTAssertEqual(limited?.message, "Rate limit reached. Try again in 60 minutes.")
        XCTAssertNil(errorCode(post(try makePacket(type: .ack))), "acks have their own limit")
        now += 3_600_001
        XCTAssertNil(errorCode(post(try makePacket(createdMs: now))), "the window rolls")
    }

    func testDeleteOnlyFromSubscribedMailboxes() throws {
        let (s, key) = try ready()
        let mine = try SigningKey.random()
        let signed = RelaySignedData.subscribe(nonce: s.nonce, binding: binding, pseudonym: key.publicKey)
        _ = s.receive(RelayFrame.subscribe([try MailboxProof(mailbox: mailbox(mine), signature: mine.sign(signed))]).encode(), context())
        let own = StoredPacketRef(mailbox: mailbox(mine), messageID: .random())
        let other = StoredPacketRef(mailbox: mailbox(try SigningKey.random()), messageID: .random())
        XCTAssertEqual(s.receive(RelayFrame.delete([own, other]).encode(), context()), [.delete([own])])
        XCTAssertEqual(s.receive(RelayFrame.delete([other]).encode(), context()), [])
    }

    func testPingPong() throws {
        let (s, _) = try ready()
        XCTAssertEqual(s.receive(RelayFrame.ping(request: 42).encode(), context()), [.send(.pong(request: 42))])
    }

    func testChallengeStatesTheRelayIdentifier() throws {
        let s = newSession()
        XCTAssertEqual(s.challenge, .challenge(nonce: s.nonce, relay: relay))
        XCTAssertEqual(s.challenge.encode().count, 2 + 32 + 16)
    }

    /// §8.3: a POST proves the right to post with the mailbox key's signature of the packet.
    /// Knowing a mailbox ID is not enough to fill it.
    func testPostWithoutTheMailboxKeysSignatureEndsTheSession() throws {
        let key = try SigningKey.random()
        let box = mailbox(key)
        let packet = try makePacket()
        let forgeries: [[UInt8]] = [
            [UInt8](repeating: 0, count: 64),
            try SigningKey.random().sign(RelaySignedData.post(packet: packet)),   // another key
            key.sign(RelaySignedData.post(packet: try makePacket())),            // another packet
            key.sign(packet),                                                    // no label
        ]
        for signature in forgeries {
            let (s, poster) = try ready()
            let actions = s.receive(RelayFrame.post(request: 1, mailbox: box, signature: signature, packet: packet).encode(), context())
            XCTAssertEqual(endCode(actions), .authFailed)
            XCTAssertFalse(actions.contains { if case .store = $0 { return true } else { return false } })
            XCTAssertEqual(s.phase, .ended)
            XCTAssertEqual(limiter.remaining(poster.publicKey, nowMs: now), 3, "the rate-limit slot is given back")
        }
        let (s, _) = try ready()
        let good = s.receive(RelayFrame.post(request: 1, mailbox: box, signature: key.sign(RelaySignedData.post(packet: packet)),
                                             packet: packet).encode(), context())
        guard case .store? = good.first else { return XCTFail("\(good)") }
    }

    /// §8.3: before READY only AUTH is taken; anything else ends the session with `malformed`.
    func testAFrameOtherThanAuthBeforeReadyIsMalformed() throws {
        for frame in [RelayFrame.ping(request: 1), signedPost(request: 1, mailbox: mailbox(try SigningKey.random()), packet: try makePacket())] {
            let s = newSession()
            XCTAssertEqual(endCode(s.receive(frame.encode(), context())), .malformed)
            XCTAssertEqual(s.phase, .ended)
        }
    }

    /// §8.3: READY's `remaining` counts the messages (not acks) this pseudonym may still post
    /// within the rolling hour, including what it posted in its earlier sessions.
    func testReadyRemainingCountsThisPseudonymsMessagesOfTheHour() throws {
        let (s, key) = try ready()
        let box = mailbox(try SigningKey.random())
        for packet in [try makePacket(), try makePacket(), try makePacket(type: .ack)] {
            guard case .store? = s.receive(signedPost(request: 1, mailbox: box, packet: packet).encode(), context()).first else {
                return XCTFail("not stored")
            }
        }
        let again = newSession()
        XCTAssertEqual(auth(again, key).last, .send(.ready(sessionLifetimeSeconds: 3600, ratePerHour: 100, remaining: 1)))
        XCTAssertEqual(auth(newSession(), try SigningKey.random()).last,
                       .send(.ready(sessionLifetimeSeconds: 3600, ratePerHour: 100, remaining: 3)), "per pseudonym")
        now += 3_600_001
        XCTAssertEqual(auth(newSession(), key).last, .send(.ready(sessionLifetimeSeconds: 3600, ratePerHour: 100, remaining: 3)),
                       "a rolling hour")
    }
}
