import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// With `forwardSecrecy` off, an ack that settles the last message sealed to a receiver key
/// while it was on, and would move the release (docs/PROTOCOL.md §13.3 rule 6), sends no
/// release-only ack: off announces nothing, and a §6.2 ack with no IDs does not exist.
/// Making one threw ("An ack carries 1 to 255 message IDs"), so that ack was refused every
/// time it came (from a carrier: dropped for good) and the message never became delivered.
@Suite struct ReleaseWithTheOptionOffTests {
    /// Brings every packet of `kind` in `from`'s outbox to `to`, and empties it.
    private func drain(_ kind: OutboxRow.Kind, from: Node, to: Node) throws {
        let rows = try from.withStore { store, _ in try store.outboxRows(kind: kind) }
        for row in rows {
            try to.injectRouted(row.packet)
            try from.withStore { store, _ in try store.removeOutbox(row.packetID) }
        }
    }

    @Test func anAckThatWouldReleaseIsTakenWithTheOptionOff() throws {
        let pair = try Pair()
        defer { pair.close() }
        // A round trip on: each holds the other's receiver key, the releases are sent.
        let first = try pair.alice.send(to: pair.bobID, text: "on").messageID
        try drain(.message, from: pair.alice, to: pair.bob)
        try drain(.ack, from: pair.bob, to: pair.alice)
        try drain(.ack, from: pair.alice, to: pair.bob)
        #expect(try pair.alice.status(of: first) == .delivered)
        // Sealed to Bob's newest key while on; Alice turns the option off before his ack.
        let inFlight = try pair.alice.send(to: pair.bobID, text: "in flight").messageID
        let packet = try #require(try pair.alice.withStore { store, _ in try store.outboxRow(inFlight)?.packet })
        pair.alice.close()
        var options = fastOptions()
        options.forwardSecrecy = false
        let alice = try Node(dataDirectory: pair.dirA.path, options: options)
        defer { alice.close() }
        try alice.unlock(pin: testPIN)
        // Bob opens it with his newest key (he mints the next) and acks with his announcement.
        try pair.bob.injectRouted(packet)
        let acks = try pair.bob.withStore { store, _ in try store.outboxRows(kind: .ack).map(\.packet) }
        #expect(!acks.isEmpty)
        for ack in acks { try alice.injectRouted(ack) }
        #expect(try alice.status(of: inFlight) == .delivered)
        #expect(try alice.withStore { store, _ in try store.outboxRows(kind: .ack) }.isEmpty)
    }
}
