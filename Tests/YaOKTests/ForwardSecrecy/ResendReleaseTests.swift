import Testing
@testable import YaOKSupport
@testable import YaOKCrypto

/// docs/PROTOCOL.md §13.3 rule 2: a resend sealed to the contact's newer key does not
/// release the key its earlier copies went to (issue 19: those copies are still in flight).
@Suite struct ResendReleaseTests {
    func key(_ id: UInt32) throws -> ReceiverKey { try ReceiverKeyPair.generate(id: id).key }

    @Test func aResendToANewerKeyKeepsTheEarlierKeyUnreleased() throws {
        var alice = ReceiverKeyRing()
        let now: Int64 = 1_700_000_000_000
        let expires = now + 14 * 86_400_000
        try alice.acknowledged([], announced: Announcement(key: try key(3), release: 0), nowMs: now)
        alice.sent(messageID: [UInt8](repeating: 1, count: 16), peerKeyID: 3, expiresMs: expires)
        // Bob moves to key 4; Alice resends the unacknowledged message to it, and sends another.
        try alice.acknowledged([], announced: Announcement(key: try key(4), release: 0), nowMs: now + 1)
        alice.sent(messageID: [UInt8](repeating: 1, count: 16), peerKeyID: 4, expiresMs: expires)
        alice.sent(messageID: [UInt8](repeating: 2, count: 16), peerKeyID: 4, expiresMs: expires)
        // The copy sealed to key 3 may still arrive: key 3 is not released.
        #expect(try alice.announcement(nowMs: now + 2).release == 2)
        // Once the message is acknowledged, key 3 goes.
        try alice.acknowledged([[UInt8](repeating: 1, count: 16)], announced: nil, nowMs: now + 3)
        #expect(try alice.announcement(nowMs: now + 4).release == 3)
    }
}

/// ReceiverKeyRing.checkpoint / rollBack (a send refused in a group commit): the ring comes
/// back exactly, the sends evicted at the bound and the release included, and the
/// checkpoint shares no storage with the ring (changing it copies nothing).
@Suite struct RingCheckpointTests {
    @Test func aRollBackRestoresTheRingExactlyEvenPastTheBound() throws {
        var ring = ReceiverKeyRing()
        let now: Int64 = 1_700_000_000_000
        try ring.acknowledged([], announced: Announcement(key: try ReceiverKeyPair.generate(id: 3).key, release: 0), nowMs: now)
        func id(_ n: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(n).bigEndian) { Array($0) } + [UInt8](repeating: 0, count: 12) }
        for n in 0..<ReceiverKeyRing.maxPending { ring.sent(messageID: id(n), peerKeyID: 3, expiresMs: now + Int64(n) + 1) }
        ring.markStored(version: 7)
        let before = ring.pending.dictionary.mapValues { "\($0.keyID)/\($0.expiresMs)" }
        let release = try ring.announcement(nowMs: now).release
        let checkpoint = ring.checkpoint()
        // Past the bound the oldest send is forgotten; a resend moves another; a new key is heard.
        ring.sent(messageID: id(ReceiverKeyRing.maxPending), peerKeyID: 3, expiresMs: now + 99_999_999)
        ring.sent(messageID: id(5), peerKeyID: 3, expiresMs: now + 99_999_999)
        try ring.acknowledged([id(6)], announced: Announcement(key: try ReceiverKeyPair.generate(id: 4).key, release: 0), nowMs: now + 1)
        #expect(ring.pending[id(0)] == nil)
        ring.rollBack(to: checkpoint)
        #expect(ring.pending.dictionary.mapValues { "\($0.keyID)/\($0.expiresMs)" } == before)
        #expect(ring.pending.touched.isEmpty)  // nothing for the store to write back
        #expect(ring.peerKey?.id == 3 && ring.storeVersion == 7)
        #expect(try ring.announcement(nowMs: now).release == release)
        // The release's statistics came back with the entries: acking all but the newest leaves key 3 held.
        try ring.acknowledged((0..<ReceiverKeyRing.maxPending - 1).map(id), announced: nil, nowMs: now)
        #expect(ring.pending.count == 1)
        // Kept changes stay, and the journal ends with them.
        let again = ring.checkpoint()
        ring.sent(messageID: id(1), peerKeyID: 3, expiresMs: now + 5)
        ring.keepChanges()
        #expect(ring.pending[id(1)]?.expiresMs == now + 5)
        _ = again
    }
}

extension RingCheckpointTests {
    /// A refused send's entry, rolled back, holds back no release: the per-key statistics the
    /// release reads (PendingSends.byKey) come back with the entries, a new entry's and a
    /// later expiry's alike (§13.3 rule 1).
    @Test func aRolledBackSendHoldsBackNoRelease() throws {
        let now: Int64 = 1_700_000_000_000
        func id(_ n: UInt8) -> [UInt8] { [n] + [UInt8](repeating: 0, count: 15) }
        for resend in [false, true] {
            var ring = ReceiverKeyRing()
            try ring.acknowledged([], announced: Announcement(key: try ReceiverKeyPair.generate(id: 3).key, release: 0), nowMs: now)
            ring.sent(messageID: id(1), peerKeyID: 3, expiresMs: now + 10)
            let checkpoint = ring.checkpoint()
            // Refused: a new message to key 3, or a resend of the one there expiring much later.
            ring.sent(messageID: id(resend ? 1 : 2), peerKeyID: 3, expiresMs: now + 99_999_999)
            ring.rollBack(to: checkpoint)
            // The contact moves to key 4; message 1 expires (resend) or is acked: key 3 is free.
            let ack = resend ? [] : [id(1)]
            try ring.acknowledged(ack, announced: Announcement(key: try ReceiverKeyPair.generate(id: 4).key, release: 0), nowMs: now + 20)
            #expect(ring.releaseAdvances(nowMs: now + 20), "resend: \(resend)")
            #expect(try ring.announcement(nowMs: now + 20).release == 3, "resend: \(resend)")
        }
    }
}
