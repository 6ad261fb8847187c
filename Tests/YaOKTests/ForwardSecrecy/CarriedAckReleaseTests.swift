import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// docs/PROTOCOL.md §13.3 rule 6 after a carried ack: when Carol's carried ack (brought by
/// Bob, a stranger) settles the last of Alice's messages to her, Alice queues the
/// release-only ack at once, as after a routed ack; before, the release waited for Alice's
/// next message to Carol, and Carol kept the keys that opened the carried copies.
@Suite(.serialized) struct CarriedAckReleaseTests {
    func releaseOnlyAcks(_ node: Node, to contact: Int64) throws -> Int {
        let all = try node.state.withLock { try $0.store!.outboxRows(kind: .ack) }.filter { $0.contactID == contact }
        let acknowledging = Set(try node.acknowledgingAcks.map(\.packetID.bytes))
        return all.filter { !acknowledging.contains($0.packetID.bytes) }.count
    }

    func ownKeyIDs(_ m: Meeting, _ name: String, contact: Int64) throws -> [UInt32] {
        try m[name].state.withLock { s in
            guard let keys = s.keys, let store = s.store else { throw YaOKError(.locked) }
            return try store.receiverKeyRing(contactID: contact, cipher: keys.cipher).own.map(\.pair.key.id)
        }
    }

    /// Alice and Carol made contacts and a message each way sent directly: each holds the
    /// other's receiver key. Returns (Carol's id at Alice, Alice's id at Carol).
    func acquainted(_ m: Meeting) throws -> (Int64, Int64) {
        let (carolAtAlice, aliceAtCarol) = try m.befriend("Alice", "Carol")
        let tests = CarriedForwardSecrecyTests()
        try tests.direct(m, "Alice", "Carol", contact: carolAtAlice, "hello")
        try tests.direct(m, "Carol", "Alice", contact: aliceAtCarol, "hi")
        #expect(try m["Alice"].forwardSecrecy(carolAtAlice).active)
        return (carolAtAlice, aliceAtCarol)
    }

    /// What `name` carries now.
    func carriedAt(_ m: Meeting, _ name: String) throws -> [CarriedPacket] {
        try m[name].state.withLock { s in try s.store?.carriedPackets(after: nil, nowMs: s.delivery.now, limit: 10) ?? [] }
    }

    @Test func aCarriedAckThatSettlesTheLastMessageSendsTheRelease() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, aliceAtCarol) = try acquainted(m)
        #expect(try releaseOnlyAcks(m["Alice"], to: carolAtAlice) == 0)

        let sent = try m["Alice"].send(to: carolAtAlice, text: "carried")
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 }
        let copies = Set(m["Bob"].state.withLock { s in
            (try? s.store?.carriedPackets(after: nil, nowMs: s.delivery.now, limit: 10)) ?? []
        }.map(\.identity))
        func ackAtBob() -> Bool {
            m["Bob"].state.withLock { s in
                (try? s.store?.carriedPackets(after: nil, nowMs: s.delivery.now, limit: 10)) ?? []
            }.contains { !copies.contains($0.identity) }
        }
        try m.meet("Bob", "Carol") { m["Carol"].incoming(aliceAtCarol).count == 2 && ackAtBob() }
        #expect(ackAtBob())
        try m.meet("Bob", "Alice") { (try? m["Alice"].status(of: sent.messageID)) == .delivered }
        #expect(try m["Alice"].status(of: sent.messageID) == .delivered)
        // The carried ack settled the message: the release is queued for Carol now.
        #expect(try releaseOnlyAcks(m["Alice"], to: carolAtAlice) == 1)

        // And it reaches her at the next meeting: she erases the key that opened the carried
        // copy. (Here Carol's routed ack, which meets Alice at the same time, would also move
        // the release; the check above is the one that needs the carried path.)
        let before = try ownKeyIDs(m, "Carol", contact: aliceAtCarol)
        let pipe = try m.link("Alice", "Carol") { (try? releaseOnlyAcks(m["Alice"], to: carolAtAlice)) == 0 }
        m.settle("Alice", "Carol")
        pipe.close()
        m.settle("Alice", "Carol")
        let after = try ownKeyIDs(m, "Carol", contact: aliceAtCarol)
        #expect(after.count < before.count, "Carol's keys \(before) then \(after)")
        #expect(after.last == before.last)
    }

    /// With the option turned off before the carried ack comes, the ack still settles the
    /// message sealed to Carol's receiver key while it was on (as a routed ack does): it
    /// held back the release until the carried copy's expiry, and Carol kept the keys.
    @Test func aCarriedAckSettlesWithTheOptionOff() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"])
        defer { m.finish() }
        let (carolAtAlice, aliceAtCarol) = try acquainted(m)

        let sent = try m["Alice"].send(to: carolAtAlice, text: "carried")
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 }
        let copies = Set(try carriedAt(m, "Bob").map(\.identity))
        try m.meet("Bob", "Carol") {
            m["Carol"].incoming(aliceAtCarol).count == 2 && ((try? carriedAt(m, "Bob"))?.contains { !copies.contains($0.identity) } ?? false)
        }
        func pending() throws -> Bool {
            try m["Alice"].state.withLock { s in
                guard let keys = s.keys, let store = s.store else { throw YaOKError(.locked) }
                return try store.receiverKeyRing(contactID: carolAtAlice, cipher: keys.cipher).pending[sent.messageID.bytes] != nil
            }
        }
        #expect(try pending())
        try m.reopen("Alice") { $0.forwardSecrecy = false }
        try m.meet("Bob", "Alice") { (try? m["Alice"].status(of: sent.messageID)) == .delivered }
        #expect(try m["Alice"].status(of: sent.messageID) == .delivered)
        #expect(try !pending(), "the carried ack settled it")
        #expect(try releaseOnlyAcks(m["Alice"], to: carolAtAlice) == 0, "off: no release is announced")
    }
}
