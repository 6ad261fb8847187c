import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Regressions for the two duplicate-detection attacks of the review (issue 7 §3).
@Suite struct DuplicateAttackTests {
    /// Junk injected under a genuine packet's ID with a long lifetime must not make the
    /// genuine packet (or its retries) a "duplicate".
    @Test func junkUnderAGenuineIDDoesNotSquatIt() throws {
        let pair = try Pair()
        defer { pair.close() }
        let bobKey = try pair.bob.profile().publicIdentity.encryptionKey
        let aliceIdentity = try pair.alice.identity()
        let now = Clock.milliseconds()
        let (genuineHeader, genuine) = try SealedMessage.seal(Array("the real one".utf8), from: aliceIdentity, to: bobKey,
                                                              createdMs: now)
        var junkHeader = genuineHeader
        junkHeader.lifetimeMinutes = Node.maxAcceptedLifetimeMinutes
        let junk = try Packet.routed(junkHeader, payload: [UInt8](repeating: 0x41, count: 200)).encode()
        try pair.bob.injectRouted(junk)
        try pair.bob.injectRouted(genuine)
        #expect(try pair.bob.texts(pair.aliceID) == ["the real one"])
        #expect(try pair.bob.state.withLock { try $0.store!.seen.storedCount() } == 1)  // only the genuine one
    }

    /// What peers can make a node remember is bounded: the table evicts the soonest-expiring.
    @Test func seenTableIsCapped() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try Store(directory: dir.path)
        defer { store.close() }
        let filter = try DuplicateFilter(database: store.db, maxEntries: 100)
        try store.db.transaction {
            for i in 0..<(DuplicateFilter.purgeInterval + 50) {
                try filter.record(MessageID(high: 1, low: UInt64(i)), expiresAtMs: 10_000_000 + Int64(i), nowMs: 1)
            }
        }
        try filter.purge(nowMs: 1)
        #expect(try filter.storedCount() == 100)
        // The survivors are the latest-expiring ones.
        #expect(try filter.contains(MessageID(high: 1, low: UInt64(DuplicateFilter.purgeInterval + 49))))
        filter.dropFront()
        #expect(try !filter.contains(MessageID(high: 1, low: 0)))
    }

    /// A retransmission of a stored message is dropped and acknowledged again, not stored twice.
    @Test func retransmissionIsDroppedAndReacked() throws {
        let pair = try Pair()
        defer { pair.close() }
        let bobKey = try pair.bob.profile().publicIdentity.encryptionKey
        let (_, packet) = try SealedMessage.seal(Array("once".utf8), from: try pair.alice.identity(), to: bobKey,
                                                 createdMs: Clock.milliseconds())
        try pair.bob.injectRouted(packet)
        try pair.bob.injectRouted(packet)
        #expect(try pair.bob.texts(pair.aliceID) == ["once"])
        // One ack of it (and, beside it, a release-only ack: §13.5).
        #expect(try pair.bob.acknowledgingAcks.count == 1)
    }

    @Test func tooLongALifetimeIsRefused() throws {
        let pair = try Pair()
        defer { pair.close() }
        let bobKey = try pair.bob.profile().publicIdentity.encryptionKey
        let (_, packet) = try SealedMessage.seal(Array("x".utf8), from: try pair.alice.identity(), to: bobKey,
                                                 createdMs: Clock.milliseconds(),
                                                 lifetimeMinutes: Node.maxAcceptedLifetimeMinutes + 1)
        #expect(throws: YaOKError(.malformedPacket)) { try pair.bob.injectRouted(packet) }
    }
}
