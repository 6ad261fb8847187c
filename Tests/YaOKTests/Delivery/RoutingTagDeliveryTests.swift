import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The node recognises packets by their routing tag (docs/PROTOCOL.md §4.3): only the
/// intended recipient takes one, it is attributed to the contact whose tag it carries, and
/// a stranger's is dropped.
@Suite struct RoutingTagDeliveryTests {
    /// Alice and Bob are contacts; Carol has both of them as contacts (she holds both cards).
    struct Trio {
        let pair: Pair
        let dirC = TempDir()
        let carol: Node
        let carolInBob: Int64, aliceInCarol: Int64
        init() throws {
            pair = try Pair()
            carol = try makeNode(dirC, name: "Carol")
            carolInBob = try pair.bob.addContact(card: carol.profile().text).id
            aliceInCarol = try carol.addContact(card: pair.alice.profile().text).id
            _ = try carol.addContact(card: pair.bob.profile().text)
            _ = try pair.alice.addContact(card: carol.profile().text)
        }
        func close() {
            carol.close()
            dirC.remove()
            pair.close()
        }
    }

    func seal(_ text: String, from node: Node, to recipient: Node, createdMs: Int64 = Clock.milliseconds()) throws -> [UInt8] {
        try SealedMessage.seal(Array(text.utf8), from: try node.identity(),
                               to: try recipient.profile().publicIdentity.encryptionKey, createdMs: createdMs).packet
    }

    func nothingTaken(_ node: Node) throws -> Bool {
        try node.state.withLock { try $0.store!.seen.storedCount() } == 0
            && node.state.withLock { try $0.store!.outboxRows(kind: .ack) }.isEmpty
    }

    @Test func onlyTheIntendedRecipientTakesAPacketAndKnowsItsSender() throws {
        let trio = try Trio()
        defer { trio.close() }
        let packet = try seal("for Bob only", from: trio.pair.alice, to: trio.pair.bob)
        // Carol knows Alice and Bob, and is on the path: the packet is not hers.
        try trio.carol.injectRouted(packet)
        #expect(try trio.carol.texts(trio.aliceInCarol).isEmpty)
        #expect(try nothingTaken(trio.carol))
        #expect(try !trio.carol.securityEvents().contains { $0.kind == .tamperedMessage || $0.kind == .unknownSender })
        // Bob takes it, in Alice's conversation, and acknowledges it to her.
        try trio.pair.bob.injectRouted(packet)
        #expect(try trio.pair.bob.texts(trio.pair.aliceID) == ["for Bob only"])
        #expect(try trio.pair.bob.texts(trio.carolInBob).isEmpty)
        // (Beside it, a release-only ack to Alice too: §13.5.)
        #expect(try trio.pair.bob.acknowledgingAcks.map(\.contactID) == [trio.pair.aliceID])
        #expect(try trio.pair.bob.state.withLock { try $0.store!.outboxRows(kind: .ack) }.allSatisfy {
            $0.contactID == trio.pair.aliceID
        })
    }

    @Test func aPacketIsAttributedToTheContactWhoseTagItCarries() throws {
        let trio = try Trio()
        defer { trio.close() }
        try trio.pair.bob.injectRouted(try seal("from Carol", from: trio.carol, to: trio.pair.bob))
        try trio.pair.bob.injectRouted(try seal("from Alice", from: trio.pair.alice, to: trio.pair.bob))
        #expect(try trio.pair.bob.texts(trio.carolInBob) == ["from Carol"])
        #expect(try trio.pair.bob.texts(trio.pair.aliceID) == ["from Alice"])
    }

    /// Packets of another day get that day's tags, computed when the day is first seen.
    @Test func aPacketFromYesterdayIsRecognised() throws {
        let pair = try Pair()
        defer { pair.close() }
        let yesterday = Clock.milliseconds() - RoutingTag.dayMs
        try pair.bob.injectRouted(try seal("yesterday", from: pair.alice, to: pair.bob, createdMs: yesterday))
        try pair.bob.injectRouted(try seal("today", from: pair.alice, to: pair.bob))
        #expect(Set(try pair.bob.texts(pair.aliceID)) == ["yesterday", "today"])
    }

    @Test func aStrangersPacketIsDropped() throws {
        let pair = try Pair()
        defer { pair.close() }
        let dirD = TempDir()
        defer { dirD.remove() }
        let dave = try makeNode(dirD, name: "Dave")
        defer { dave.close() }
        _ = try dave.addContact(card: pair.bob.profile().text)  // Dave knows Bob; Bob does not know Dave
        let before = try pair.bob.securityEvents().count
        try pair.bob.injectRouted(try seal("hello?", from: dave, to: pair.bob))
        #expect(try nothingTaken(pair.bob))
        #expect(try pair.bob.securityEvents().count == before)
        for contact in try pair.bob.contacts() { #expect(try pair.bob.texts(contact.id).isEmpty) }
    }

    /// Acks use the pair's tag in their own direction: Bob's ack reaches Alice, and the
    /// same ack given to Carol (who knows both) is not hers.
    @Test func acksAreTaggedForTheOriginalSenderOnly() throws {
        let trio = try Trio()
        defer { trio.close() }
        let message = try trio.pair.alice.send(to: trio.pair.bobID, text: "ack me")
        let aliceKey = try trio.pair.alice.profile().publicIdentity.encryptionKey
        let bobIdentity = try trio.pair.bob.identity()
        let (_, ack) = try DeliveryAck.seal([message.messageID],
                                            key: try DeliveryAck.key(own: bobIdentity, peerKey: aliceKey, ownIsAcker: true),
                                            route: try RoutePair(own: bobIdentity, peerKey: aliceKey),
                                            createdMs: Clock.milliseconds())
        try trio.carol.injectRouted(ack)
        #expect(try nothingTaken(trio.carol))
        try trio.pair.alice.injectRouted(ack)
        #expect(try trio.pair.alice.status(of: message.messageID) == .delivered)
    }
}
