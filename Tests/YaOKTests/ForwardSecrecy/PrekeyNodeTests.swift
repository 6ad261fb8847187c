import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The prekey card in two real nodes (docs/PROTOCOL.md §13.4) on a virtual clock: Alice's
/// first messages to Bob, who has never spoken, go to the prekey of his version 2 card, not
/// his long-term key; once the prekey's retention has passed, Bob's seized data directory
/// and PIN open none of the recorded packets, and the prekey's bytes are gone from the file.
@Suite struct PrekeyNodeTests {
    let day: Int64 = 86_400_000

    struct Pair {
        let dirA = TempDir(), dirB = TempDir()
        let clock = TestClock()
        let alice: Node, bob: Node
        let aliceID: Int64

        init() throws {
            (alice, bob) = try ForwardSecretNodes.nodes(dirA, dirB, clock: clock)
            aliceID = try bob.addContact(card: alice.profile().text).id
        }

        func close() { alice.close(); bob.close(); dirA.remove(); dirB.remove() }

        /// What seizing Bob gives: his identity, and every key his data directory holds for
        /// Alice (receiver keys and prekeys), read back from the store.
        func seizeBob() throws -> (Identity, [ReceiverKeyPair]) {
            try bob.state.withLock { s in
                guard let keys = s.keys, let store = s.store else { throw YaOKError(.locked) }
                return (keys.identity, try store.receiverKeyRing(contactID: aliceID, cipher: keys.cipher).openingKeys
                            + (try store.prekeys(cipher: keys.cipher)))
            }
        }

        func prekeyRows() throws -> [[UInt8]] {
            try bob.state.withLock { s in try s.store!.db.rows("SELECT sealed FROM prekeys") { $0.blob(0) } }
        }
    }

    func opens(_ packet: [UInt8], _ seized: (Identity, [ReceiverKeyPair]), sender: [UInt8]) throws -> Bool {
        guard case .routed(let header, let payload) = try Packet.decode(packet) else { return false }
        return (try? SealedMessage.openForwardSecret(header, payload: payload, by: seized.0, matchedSender: sender,
                                                     receiverKeys: seized.1)) != nil
            || (try? SealedMessage.open(header, payload: payload, by: seized.0, matchedSender: sender)) != nil
    }

    @Test func recordedFirstMessagesCloseWhenThePrekeyIsErased() throws {
        let pair = try Pair()
        defer { pair.close() }
        let card = try pair.bob.profile()
        let prekey = try #require(card.prekey)
        #expect(card.version == 2 && Prekey.isFresh(prekey, nowMs: pair.clock.now))
        #expect(try pair.bob.profile().prekey == card.prekey)  // one prekey per day
        let bobID = try pair.alice.addContact(card: card.text).id
        let status = try pair.alice.forwardSecrecy(bobID)
        #expect(status.state == "prekey" && status.longTermSeals == 0)
        #expect(status.prekeyExposureUntilMs == (ReceiverKey.utcDay(ms: pair.clock.now) + 23) * day)
        #expect(status.summary == "forward secrecy: prekey (exposure until \(ForwardSecrecyStatus.utcDate(status.prekeyExposureUntilMs ?? 0)) 00:00 UTC; 0 sealed to the long-term key)")

        // Bob has never spoken: Alice's messages, recorded from her outbox as a relay or a
        // carrier would see them, go to his prekey.
        let sent = try (0..<3).map { try pair.alice.send(to: bobID, text: "first \($0)") }
        let recorded = try sent.map { m in try #require(try pair.alice.state.withLock { try $0.store!.outboxRow(m.messageID)?.packet }) }
        #expect(try pair.alice.forwardSecrecy(bobID).longTermSeals == 0)
        let aliceKey = try pair.alice.state.withLock { try #require($0.keys).identity.publicIdentity.encryptionKey }
        let bobIdentity = try pair.bob.state.withLock { try #require($0.keys).identity }
        for packet in recorded {  // not to the long-term key
            #expect(try !opens(packet, (bobIdentity, []), sender: aliceKey))
        }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        #expect(eventually { sent.allSatisfy { (try? pair.alice.status(of: $0.messageID)) == .delivered } })
        #expect(eventually { (try? pair.alice.forwardSecrecy(bobID).active) == true })  // Bob's ack announced a key
        pipe.close()
        #expect(Set(try pair.bob.texts(pair.aliceID)) == Set((0..<3).map { "first \($0)" }))

        // Within the stated window the prekey still opens them (its exposure, §13.4).
        let sealedRows = try pair.prekeyRows()
        #expect(sealedRows.count == 1)
        #expect(try recorded.allSatisfy { try opens($0, try pair.seizeBob(), sender: aliceKey) })

        // One day short of the bound the prekey is kept; at day D + 23 it is erased.
        pair.clock.advance(seconds: (Prekey.exposureEndMs(prekey) - pair.clock.now) / 1000 - 86_400)
        pair.bob.runDeliveryTimers()
        #expect(try pair.prekeyRows().count == 1)
        pair.clock.advance(seconds: 86_400 + 60)
        pair.bob.runDeliveryTimers()
        #expect(try pair.prekeyRows().isEmpty)
        let seized = try pair.seizeBob()
        #expect(try recorded.map { try opens($0, seized, sender: aliceKey) } == [false, false, false])
        // The bytes are gone from every file of Bob's data directory, not only unlinked.
        let files = try FileManager.default.contentsOfDirectory(atPath: pair.dirB.path).map {
            Array(try Data(contentsOf: URL(fileURLWithPath: pair.dirB.path + "/" + $0)))
        }
        #expect(!files.contains { file in sealedRows.contains { holdsAPiece(of: $0, in: file) } })
    }

    /// A card whose prekey is more than 7 days past its day is not used: the message goes to
    /// the long-term key, counted and shown. Re-adding a newer card of the same contact
    /// refreshes the prekey (and says so); the same card again changes nothing.
    @Test func aStalePrekeyFallsBackVisiblyAndANewerCardRefreshesIt() throws {
        let pair = try Pair()
        defer { pair.close() }
        let oldCard = try pair.bob.profile().text
        let bobID = try pair.alice.addContact(card: oldCard).id
        pair.clock.advance(seconds: 8 * 86_400)
        _ = try pair.alice.send(to: bobID, text: "late")
        var status = try pair.alice.forwardSecrecy(bobID)
        #expect(status.state == "not_yet" && status.longTermSeals == 1 && status.prekeyExposureUntilMs == nil)
        #expect(status.summary.hasPrefix("forward secrecy: not yet"))

        let fresh = try pair.bob.profile()
        let oldPrekey = try ContactCard(text: oldCard).prekey
        #expect(fresh.prekey != nil && fresh.prekey?.id != oldPrekey?.id)
        #expect(try pair.bob.state.withLock { try $0.store!.db.rows("SELECT count(*) FROM prekeys") { $0.int64(0) } } == [2])
        #expect(errorMessage { _ = try pair.alice.addContact(card: fresh.text) }
                == "Bob is already in your contacts; their card's newer prekey was saved")
        status = try pair.alice.forwardSecrecy(bobID)
        #expect(status.state == "prekey")
        _ = try pair.alice.send(to: bobID, text: "fresh")
        #expect(try pair.alice.forwardSecrecy(bobID).longTermSeals == 1)
        #expect(errorMessage { _ = try pair.alice.addContact(card: fresh.text) } == "Bob is already in your contacts")
        #expect(errorMessage { _ = try pair.alice.addContact(card: oldCard) } == "Bob is already in your contacts")
    }

    /// The contact's prekey lives in its key state (deleted with it); the node's own
    /// prekeys are wiped by a reset.
    @Test func deleteAndResetLeaveNoPrekey() throws {
        let pair = try Pair()
        defer { pair.close() }
        let bobID = try pair.alice.addContact(card: pair.bob.profile().text).id
        _ = try pair.alice.profile()
        func count(_ node: Node, _ sql: String) throws -> Int64 {
            try node.state.withLock { try $0.store!.db.rows(sql) { $0.int64(0) }.first ?? -1 }
        }
        #expect(try count(pair.alice, "SELECT count(*) FROM receiver_key_state") == 1)
        try pair.alice.deleteContact(bobID)
        #expect(try count(pair.alice, "SELECT count(*) FROM receiver_key_state") == 0)
        #expect(try count(pair.bob, "SELECT count(*) FROM prekeys") == 1)
        try pair.bob.reset(confirm: true)
        #expect(try count(pair.bob, "SELECT count(*) FROM prekeys") == 0)
    }

    /// A node with forward secrecy off shows a version 1 card: it would open nothing sealed
    /// to a prekey, so it publishes none (and keeps none).
    @Test func aNodeWithForwardSecrecyOffShowsAVersion1Card() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var options = fastOptions()
        options.forwardSecrecy = false
        let node = try Node(dataDirectory: dir.path, options: options)
        defer { node.close() }
        _ = try node.setup(name: "Dora", pin: testPIN, confirmation: testPIN)
        #expect(try node.profile().text == node.identity().card.text)
        #expect(try node.state.withLock { try $0.store!.db.rows("SELECT count(*) FROM prekeys") { $0.int64(0) } } == [0])
    }

    /// A node locked at day D + 23 erases the prekey on time all the same (its ID is its
    /// day: no key is needed to know it has expired), from the file too. Waiting for the
    /// unlock would keep it for as long as the node stays locked, and gain nothing: every
    /// packet sealed to it has expired by then (made before D + 8, living 14 days), so no
    /// held packet needs it.
    @Test func aLockedNodeErasesAPrekeyOnTime() throws {
        let pair = try Pair()
        defer { pair.close() }
        let prekey = try #require(try pair.bob.profile().prekey)
        let sealedRows = try pair.prekeyRows()
        try pair.bob.lock()
        pair.clock.advance(seconds: (Prekey.exposureEndMs(prekey) - pair.clock.now) / 1000 - 3_600)
        pair.bob.runDeliveryTimers()
        #expect(try pair.prekeyRows().count == 1)
        pair.clock.advance(seconds: 3_600 + 60)
        pair.bob.runDeliveryTimers()
        #expect(try pair.prekeyRows().isEmpty)
        let files = try FileManager.default.contentsOfDirectory(atPath: pair.dirB.path).map {
            Array(try Data(contentsOf: URL(fileURLWithPath: pair.dirB.path + "/" + $0)))
        }
        #expect(!files.contains { file in sealedRows.contains { holdsAPiece(of: $0, in: file) } })
        try pair.bob.unlock(pin: testPIN)
        #expect(try pair.bob.profile().prekey?.id == ReceiverKey.prekeyID(day: ReceiverKey.utcDay(ms: pair.clock.now)))
    }

    /// A clock before 1970 (or past the 31 bits of a key_id's day) makes no prekey: its day
    /// would wrap into one some five million years ahead, never used by a sender and never
    /// erased. The card is version 1 then (stated fallback, §13.5).
    @Test func aClockOutsideTheKeyIDsDaysMakesNoPrekey() throws {
        let pair = try Pair()
        defer { pair.close() }
        pair.clock.moveWallClock(seconds: -pair.clock.now / 1000 - 86_400)
        #expect(try pair.bob.profile().version == 1)
        #expect(try pair.prekeyRows().isEmpty)
    }

    /// With the option off the state is "off" and nothing else: no prekey exposure (in the
    /// status, the diagnostics JSON, or C's yaok_contact_prekey_exposure, which documents 0
    /// in every other state), although the contact's prekey is still held.
    @Test func withTheOptionOffAHeldPrekeyIsNotShown() throws {
        let pair = try Pair()
        defer { pair.close() }
        let bobID = try pair.alice.addContact(card: pair.bob.profile().text).id
        #expect(try pair.alice.forwardSecrecy(bobID).state == "prekey")
        pair.alice.close()
        var options = fastOptions(clock: pair.clock)
        options.forwardSecrecy = false
        let alice = try Node(dataDirectory: pair.dirA.path, options: options)
        defer { alice.close() }
        try alice.unlock(pin: testPIN)
        let status = try alice.forwardSecrecy(bobID)
        #expect(status.state == "off" && status.prekeyExposureUntilMs == nil)
        #expect(status.json.serialized == #"{"state":"off","long_term_seals":0,"receiver_keys":0}"#)
    }

}
