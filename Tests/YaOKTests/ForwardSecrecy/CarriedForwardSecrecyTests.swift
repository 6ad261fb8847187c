import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// docs/PROTOCOL.md §13.6 in real nodes with the default options (forward secrecy on):
/// Alice's carried copies to Carol and Carol's carried acks, recorded by Bob, a stranger who
/// carries them over memory links, open with the recipient's keys while in flight and with
/// none of its seized state (data directory and PIN) once delivered and settled.
@Suite(.serialized) struct CarriedForwardSecrecyTests {
    /// `from` sends `text` to `contact` over a direct link with `to`, and waits until it is
    /// delivered and both outboxes hold no ack (announcements and releases have arrived).
    func direct(_ m: Meeting, _ from: String, _ to: String, contact: Int64, _ text: String) throws {
        let sent = try m[from].send(to: contact, text: text)
        let pipe = try m.link(from, to) { (try? m[from].status(of: sent.messageID)) == .delivered }
        for name in [from, to] {
            _ = eventually { m[name].noAcksToSend }
        }
        m.settle(from, to)
        pipe.close()
        m.settle(from, to)
        #expect(try m[from].status(of: sent.messageID) == .delivered)
    }

    /// `name`'s identity and its key ring for `contact`, as its data directory and PIN give them.
    func seize(_ m: Meeting, _ name: String, contact: Int64) throws -> (Identity, [ReceiverKeyPair]) {
        try m.reopen(name)
        return try held(m, name, contact: contact)
    }

    /// `name`'s identity and its key ring for `contact`, as the running node holds them.
    func held(_ m: Meeting, _ name: String, contact: Int64) throws -> (Identity, [ReceiverKeyPair]) {
        try m[name].state.withLock { s in
            guard let keys = s.keys, let store = s.store else { throw YaOKError(.locked) }
            return (keys.identity, try store.receiverKeyRing(contactID: contact, cipher: keys.cipher).openingKeys)
        }
    }

    func opens(_ packet: CarriedPacket, by identity: Identity, keys: [ReceiverKeyPair], sender: [UInt8]) -> Bool {
        (try? CarriedSeal.openForwardSecret(packet, by: identity, senderKey: sender, receiverKeys: keys)) != nil
            || (try? CarriedSeal.open(packet, by: identity, senderKey: sender)) != nil
    }

    @Test func recordedCarriedCopiesDoNotOpenAfterDeliveryAndSeizure() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, aliceAtCarol) = try m.befriend("Alice", "Carol")
        // One message each way directly: each has heard the other's receiver key.
        try direct(m, "Alice", "Carol", contact: carolAtAlice, "hello")
        try direct(m, "Carol", "Alice", contact: aliceAtCarol, "hi")
        #expect(try m["Alice"].forwardSecrecy(carolAtAlice).active)

        let texts = ["carried 0", "carried 1", "carried 2"]
        let sent = try texts.map { try m["Alice"].send(to: carolAtAlice, text: $0) }
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 3 }
        // What the stranger recorded.
        let recorded = m["Bob"].state.withLock { s in
            (try? s.store?.carriedPackets(after: nil, nowMs: s.delivery.now, limit: 100)) ?? []
        }
        #expect(recorded.count == 3)
        let aliceKey = try m["Alice"].state.withLock { try #require($0.keys).identity.publicIdentity.encryptionKey }

        // In flight, Carol's keys open them (the window §13.1 states; and the check below
        // would see it if they opened after seizure): sealed to a receiver key, not §10.4.
        let inFlight = try held(m, "Carol", contact: aliceAtCarol)
        for packet in recorded {
            #expect(CarriedSeal.isForwardSecret(packet, receiverKeys: inFlight.1))
            #expect(opens(packet, by: inFlight.0, keys: inFlight.1, sender: aliceKey))
            #expect((try? CarriedSeal.open(packet, by: inFlight.0, senderKey: aliceKey)) == nil)
        }

        // Carol's carried acks, recorded by Bob too (what he holds beside the copies).
        let copies = Set(recorded.map(\.identity))
        func acksAtBob() -> [CarriedPacket] {
            m["Bob"].state.withLock { s in
                (try? s.store?.carriedPackets(after: nil, nowMs: s.delivery.now, limit: 100)) ?? []
            }.filter { !copies.contains($0.identity) }
        }
        try m.meet("Bob", "Carol") { m["Carol"].incoming(aliceAtCarol).count == 4 && acksAtBob().count == 3 }
        #expect(Set(m["Carol"].incoming(aliceAtCarol)) == Set(["hello"] + texts))
        let acks = acksAtBob()
        #expect(acks.count == 3)
        let carolKey = try m["Carol"].state.withLock { try #require($0.keys).identity.publicIdentity.encryptionKey }
        let aliceInFlight = try held(m, "Alice", contact: carolAtAlice)
        for ack in acks {
            #expect(CarriedSeal.isForwardSecret(ack, receiverKeys: aliceInFlight.1))
            #expect(opens(ack, by: aliceInFlight.0, keys: aliceInFlight.1, sender: carolKey))
        }
        func carolsKeyAtAlice() throws -> UInt32? {
            try m["Alice"].state.withLock { s in
                guard let keys = s.keys, let store = s.store else { throw YaOKError(.locked) }
                return try store.receiverKeyRing(contactID: carolAtAlice, cipher: keys.cipher).peerKey?.id
            }
        }
        let before = try #require(try carolsKeyAtAlice())
        try m.meet("Bob", "Alice") {
            sent.allSatisfy { (try? m["Alice"].status(of: $0.messageID)) == .delivered }
        }
        #expect(sent.allSatisfy { (try? m["Alice"].status(of: $0.messageID)) == .delivered })
        // Carried acks announce too: Alice heard Carol's newer key with no direct link.
        #expect(try #require(try carolsKeyAtAlice()) > before)
        // The routed acks and the release reach Carol at the next meeting of the two.
        try direct(m, "Carol", "Alice", contact: aliceAtCarol, "got them")
        try direct(m, "Alice", "Carol", contact: carolAtAlice, "good")

        let (identity, seized) = try seize(m, "Carol", contact: aliceAtCarol)
        #expect(!seized.isEmpty)
        #expect(recorded.map { opens($0, by: identity, keys: seized, sender: aliceKey) } == [false, false, false])
        // The first message went to Carol's card prekey (§13.4), none to her long-term key.
        #expect(try m["Alice"].forwardSecrecy(carolAtAlice).longTermSeals == 0)
        // Nor do the recorded acks open with Alice's seized state.
        let (aliceIdentity, aliceSeized) = try seize(m, "Alice", contact: carolAtAlice)
        #expect(!aliceSeized.isEmpty)
        #expect(acks.map { opens($0, by: aliceIdentity, keys: aliceSeized, sender: carolKey) } == [false, false, false])
    }

    /// With forward secrecy off (the option kept for that), a carried copy is §10.4's: it
    /// opens with the long-term key, so the test above is not vacuous.
    @Test func withTheOptionOffACarriedCopyIsSealedToTheLongTermKey() throws {
        let dirA = TempDir(), dirC = TempDir()
        defer { dirA.remove(); dirC.remove() }
        var options = fastOptions()
        options.forwardSecrecy = false
        let alice = try Node(dataDirectory: dirA.path, options: options)
        defer { alice.close() }
        _ = try alice.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        let carol = try makeNode(dirC, name: "Carol")
        defer { carol.close() }
        #expect(Node.Options().forwardSecrecy)
        let id = try alice.addContact(card: carol.profile().text).id
        _ = try alice.send(to: id, text: "plain")
        try alice.makeOwnCarriedCopies()
        let packet = try #require(alice.state.withLock { s in
            try? s.store?.carriedPackets(after: nil, nowMs: s.delivery.now, limit: 10).first
        })
        let carolIdentity = try carol.state.withLock { try #require($0.keys).identity }
        let aliceKey = try alice.state.withLock { try #require($0.keys).identity.publicIdentity.encryptionKey }
        #expect((try? CarriedSeal.open(packet, by: carolIdentity, senderKey: aliceKey)) != nil)
        #expect(!(try alice.forwardSecrecy(id).enabled))
    }
}
