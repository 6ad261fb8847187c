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
