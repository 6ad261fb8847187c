import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// docs/PROTOCOL.md §13 in two real nodes with `forwardSecrecy` on, over a memory link:
/// the first message goes to the prekey of a version 2 card (to the long-term key, counted,
/// with a version 1 card), the rest to receiver keys; after delivery, Bob's keys as his data
/// directory holds them open none of the recorded packets but the stated exception.
@Suite struct NodeForwardSecrecyTests {
    struct FSPair {
        let dirA = TempDir(), dirB = TempDir()
        let alice: Node, bob: Node
        let bobID: Int64, aliceID: Int64

        /// `v1Cards`: the two add each other's version 1 card (no prekey, §13.5's fallback).
        init(clock: TestClock? = nil, v1Cards: Bool = false) throws {
            var options = fastOptions(clock: clock)
            options.forwardSecrecy = true
            alice = try Node(dataDirectory: dirA.path, options: options)
            _ = try alice.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
            bob = try Node(dataDirectory: dirB.path, options: options)
            _ = try bob.setup(name: "Bob", pin: testPIN, confirmation: testPIN)
            bobID = try alice.addContact(card: v1Cards ? bob.identity().card.text : bob.profile().text).id
            aliceID = try bob.addContact(card: v1Cards ? alice.identity().card.text : alice.profile().text).id
        }

        func close() {
            alice.close(); bob.close(); dirA.remove(); dirB.remove()
        }
    }

    /// Sends while no link is open (so the packet can be read from the outbox: what a
    /// recorder on the way would see), then links the two until it is delivered.
    func exchange(_ from: Node, to contact: Int64, _ text: String, _ pair: FSPair) throws -> [UInt8] {
        let m = try from.send(to: contact, text: text)
        let packet = try #require(try from.state.withLock { try $0.store!.outboxRow(m.messageID)?.packet })
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { (try? from.status(of: m.messageID)) == .delivered })
        // Let the acks that follow (announcements, releases) arrive too.
        _ = eventually { from.noAcksToSend }
        let other = from === pair.alice ? pair.bob : pair.alice
        _ = eventually { other.noAcksToSend }
        return packet
    }

    @Test func deliveredPacketsDoNotOpenWithTheSeizedState() throws {
        let pair = try FSPair()
        defer { pair.close() }
        var recorded: [[UInt8]] = []
        for round in 0..<4 {
            recorded.append(try exchange(pair.alice, to: pair.bobID, "to Bob \(round)", pair))
            _ = try exchange(pair.bob, to: pair.aliceID, "to Alice \(round)", pair)
        }
        #expect(try pair.bob.texts(pair.aliceID).filter { $0.hasPrefix("to Bob") }.count == 4)
        // The first went to Bob's card prekey, none to the long-term key.
        let status = try pair.alice.forwardSecrecy(pair.bobID)
        #expect(status.enabled && status.active && status.longTermSeals == 0)
        #expect(status.summary.hasPrefix("forward secrecy: on"))

        // Seizure of Bob: his identity, his key ring and his prekeys as his data directory
        // holds them. The first message opens with the prekey, still held (its stated
        // exposure, §13.4: until 23 days after its day); PrekeyNodeTests shows it closing.
        let (identity, ring, prekeys) = try pair.bob.state.withLock { s -> (Identity, ReceiverKeyRing, [ReceiverKeyPair]) in
            let keys = try #require(s.keys)
            return (keys.identity, try s.store!.receiverKeyRing(contactID: pair.aliceID, cipher: keys.cipher),
                    try s.store!.prekeys(cipher: keys.cipher))
        }
        #expect(!ring.openingKeys.isEmpty && prekeys.count == 1)
        let aliceKey = try pair.alice.state.withLock { try #require($0.keys).identity.publicIdentity.encryptionKey }
        var opened: [Bool] = []
        for packet in recorded {
            guard case .routed(let header, let payload) = try Packet.decode(packet) else { Issue.record("not routed"); continue }
            let forwardSecret = (try? SealedMessage.openForwardSecret(header, payload: payload, by: identity,
                                                                      matchedSender: aliceKey, receiverKeys: ring.openingKeys + prekeys)) != nil
            let longTerm = (try? SealedMessage.open(header, payload: payload, by: identity, matchedSender: aliceKey)) != nil
            opened.append(forwardSecret || longTerm)
        }
        #expect(opened == [true, false, false, false])
    }

    /// Reopening with the option off stops sealing to receiver keys and announcing, not
    /// opening (§13.5): a message a contact sealed to a key announced while it was on, and
    /// the contact's forward-secret acks, still open, so turning it off loses nothing in
    /// flight. (Before, the message never opened and the reply was never acknowledged.)
    @Test func turningItOffLosesNothingInFlight() throws {
        let pair = try FSPair()
        defer { pair.close() }
        _ = try exchange(pair.alice, to: pair.bobID, "hello", pair)
        _ = try exchange(pair.bob, to: pair.aliceID, "hi", pair)
        let m = try pair.alice.send(to: pair.bobID, text: "sealed to your receiver key")
        #expect(try pair.alice.forwardSecrecy(pair.bobID).active)
        pair.bob.close()
        var options = fastOptions()
        options.forwardSecrecy = false
        let bob = try Node(dataDirectory: pair.dirB.path, options: options)
        defer { bob.close() }
        try bob.unlock(pin: testPIN)
        let pipe = try MemoryPipe(pair.alice, bob)
        defer { pipe.close() }
        #expect(eventually { (try? bob.texts(pair.aliceID))?.contains("sealed to your receiver key") == true })
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
        // Bob's reply goes to Alice's long-term key; her ack to him is forward-secret.
        let reply = try bob.send(to: pair.aliceID, text: "off now")
        #expect(eventually { (try? bob.status(of: reply.messageID)) == .delivered })
    }

    /// With a version 1 card (no prekey) the first message goes to the long-term key, and
    /// says so (§13.5).
    @Test func aFirstMessageSaysItWentToTheLongTermKey() throws {
        let pair = try FSPair(v1Cards: true)
        defer { pair.close() }
        _ = try pair.alice.send(to: pair.bobID, text: "before any announcement")
        let status = try pair.alice.forwardSecrecy(pair.bobID)
        #expect(status.enabled && !status.active && status.longTermSeals == 1)
        #expect(status.summary.hasPrefix("forward secrecy: not yet"))
    }

    /// A locked node keeps receiving forward-secret messages (held as they arrived) and
    /// opens them at the unlock.
    @Test func aLockedNodeHoldsAndOpensAtUnlock() throws {
        let pair = try FSPair()
        defer { pair.close() }
        _ = try exchange(pair.alice, to: pair.bobID, "hello", pair)
        _ = try exchange(pair.bob, to: pair.aliceID, "hi", pair)
        try pair.bob.lock()
        let m = try pair.alice.send(to: pair.bobID, text: "while you sleep")
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .sent })
        #expect(try pair.bob.state.withLock { try $0.store!.heldCount() } == 1)
        try pair.bob.unlock(pin: testPIN)
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID).contains("while you sleep"))
        #expect(try pair.alice.forwardSecrecy(pair.bobID).longTermSeals == 0)  // the first went to Bob's prekey
    }

    /// §13.3 rule 5 in the node: the delivery sweep erases a key superseded longer ago than
    /// the retention, from the store, even when nothing more comes from the contact.
    @Test func theSweepErasesKeysPastTheirRetention() throws {
        let clock = TestClock()
        let pair = try FSPair(clock: clock)
        defer { pair.close() }
        _ = try pair.bob.setAutoLock(.never)
        let peer = Announcement(key: try ReceiverKeyPair.generate(id: 1).key, release: 0)
        try pair.bob.state.withLock { s in
            guard let keys = s.keys, let store = s.store else { throw YaOKError(.locked) }
            var ring = ReceiverKeyRing()
            _ = try ring.announcement(nowMs: clock.now)                  // key 1
            try ring.opened(with: 1, announced: peer, nowMs: clock.now)  // mints 2
            try ring.opened(with: 2, announced: peer, nowMs: clock.now)  // mints 3; 1 superseded
            try store.saveReceiverKeyRing(ring, contactID: pair.aliceID, cipher: keys.cipher)
        }
        func held() throws -> [UInt32] {
            try pair.bob.state.withLock { s in
                guard let keys = s.keys, let store = s.store else { throw YaOKError(.locked) }
                return try store.receiverKeyRing(contactID: pair.aliceID, cipher: keys.cipher).own.map(\.pair.key.id)
            }
        }
        clock.advance(seconds: 14 * 86_400)
        pair.bob.runDeliveryTimers()
        #expect(try held() == [1, 2, 3])
        clock.advance(seconds: 86_400 + 3_600)
        pair.bob.runDeliveryTimers()
        #expect(try held() == [2, 3])
    }

    /// Healing in the node: a copy of Bob's keys taken mid-conversation opens nothing Alice
    /// sends after one exchange each way, though it opened what she sent before.
    @Test func oneExchangeEachWayHealsACopiedState() throws {
        let pair = try FSPair()
        defer { pair.close() }
        for round in 0..<2 {
            _ = try exchange(pair.alice, to: pair.bobID, "a\(round)", pair)
            _ = try exchange(pair.bob, to: pair.aliceID, "b\(round)", pair)
        }
        let (identity, copied) = try pair.bob.state.withLock { s -> (Identity, [ReceiverKeyPair]) in
            guard let keys = s.keys, let store = s.store else { throw YaOKError(.locked) }
            return (keys.identity, try store.receiverKeyRing(contactID: pair.aliceID, cipher: keys.cipher).openingKeys)
        }
        let aliceKey = try pair.alice.state.withLock { s -> [UInt8] in
            guard let keys = s.keys else { throw YaOKError(.locked) }
            return keys.identity.publicIdentity.encryptionKey
        }
        func opensWithCopy(_ packet: [UInt8]) throws -> Bool {
            guard case .routed(let header, let payload) = try Packet.decode(packet) else { return false }
            return (try? SealedMessage.openForwardSecret(header, payload: payload, by: identity, matchedSender: aliceKey,
                                                         receiverKeys: copied)) != nil
                || (try? SealedMessage.open(header, payload: payload, by: identity, matchedSender: aliceKey)) != nil
        }
        let beforeHealing = try exchange(pair.alice, to: pair.bobID, "still readable by the copy", pair)
        #expect(try opensWithCopy(beforeHealing))
        _ = try exchange(pair.bob, to: pair.aliceID, "reply", pair)
        let after = try (0..<3).map { try exchange(pair.alice, to: pair.bobID, "healed \($0)", pair) }
        #expect(try after.map(opensWithCopy) == [false, false, false])
    }
}
