import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Who the delivery engine believes, and when it decides it has seen a packet.
@Suite struct DeliveryTrustTests {
    /// Carol, another of Alice's contacts, learns the ID of a message Alice sent Bob (IDs
    /// travel in clear) and acknowledges it herself: it stays undelivered, because an
    /// acknowledgement counts only from the message's recipient.
    @Test func anAckCountsOnlyFromTheRecipient() throws {
        let pair = try Pair()
        defer { pair.close() }
        let dirC = TempDir()
        defer { dirC.remove() }
        let carol = try makeNode(dirC, name: "Carol")
        defer { carol.close() }
        _ = try pair.alice.addContact(card: carol.profile().text)
        _ = try carol.addContact(card: pair.alice.profile().text)

        let message = try pair.alice.send(to: pair.bobID, text: "for Bob")  // no link: stays pending
        let aliceKey = try pair.alice.profile().publicIdentity.encryptionKey
        func ack(from node: Node) throws -> [UInt8] {
            let key = try DeliveryAck.key(own: try node.identity(), peerKey: aliceKey, ownIsAcker: true)
            return try DeliveryAck.seal([message.messageID], key: key,
                                        route: RoutePair(own: try node.identity(), peerKey: aliceKey),
                                        createdMs: Clock.milliseconds()).packet
        }
        try pair.alice.injectRouted(try ack(from: carol))
        #expect(try pair.alice.status(of: message.messageID) == .pending)
        #expect(try pair.alice.outbox().map(\.messageID) == [message.messageID])

        try pair.alice.injectRouted(try ack(from: pair.bob))  // the recipient's own ack
        #expect(try pair.alice.status(of: message.messageID) == .delivered)
    }

    /// A packet is remembered as seen only after it was opened and taken: one dropped
    /// because its sender was not (yet) a contact is taken when it comes again after the
    /// sender was added, instead of being dropped as a duplicate. A stranger's packet carries
    /// no tag of any contact's, so it is "not for me": dropped, and not logged (it cannot be
    /// told from a packet for someone else).
    @Test func aPacketRefusedFromAStrangerIsTakenOnceTheyAreAContact() throws {
        let pair = try Pair()
        defer { pair.close() }
        let dirC = TempDir()
        defer { dirC.remove() }
        let carol = try makeNode(dirC, name: "Carol")
        defer { carol.close() }
        let aliceKey = try pair.alice.profile().publicIdentity.encryptionKey
        let (_, packet) = try SealedMessage.seal(Array("hello from Carol".utf8), from: try carol.identity(), to: aliceKey,
                                                 createdMs: Clock.milliseconds())
        try pair.alice.injectRouted(packet)
        #expect(try !pair.alice.securityEvents().contains { $0.kind == .unknownSender || $0.kind == .tamperedMessage })
        #expect(try pair.alice.state.withLock { try $0.store!.seen.storedCount() } == 0)
        let carolID = try pair.alice.addContact(card: carol.profile().text).id
        #expect(try pair.alice.texts(carolID).isEmpty)
        try pair.alice.injectRouted(packet)  // the sender's retry: the same bytes
        #expect(try pair.alice.texts(carolID) == ["hello from Carol"])
    }

    /// A packet held while locked is opened at unlock only if it has not expired since: its
    /// sender stopped retrying and stopped waiting for the ack, and an expired packet is
    /// what a replay looks like.
    @Test func aHeldPacketThatExpiredBeforeTheUnlockIsDropped() throws {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        defer { pair.close() }
        let bobKey = try pair.bob.profile().publicIdentity.encryptionKey
        let alice = try pair.alice.identity()
        let (_, stale) = try SealedMessage.seal(Array("too late".utf8), from: alice, to: bobKey,
                                                createdMs: clock.now, lifetimeMinutes: 1)
        let (_, fresh) = try SealedMessage.seal(Array("in time".utf8), from: alice, to: bobKey,
                                                createdMs: clock.now, lifetimeMinutes: 60)
        try pair.bob.lock()
        try pair.bob.injectRouted(stale)
        try pair.bob.injectRouted(fresh)
        #expect(try pair.bob.state.withLock { try $0.store!.heldCount() } == 2)
        clock.advance(seconds: 120)
        try pair.bob.unlock(pin: testPIN)
        #expect(eventually { (try? pair.bob.state.withLock { try $0.store!.heldCount() }) == 0 })
        #expect(try pair.bob.texts(pair.aliceID) == ["in time"])
    }
}
