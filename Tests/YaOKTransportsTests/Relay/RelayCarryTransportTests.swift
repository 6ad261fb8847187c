import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode
@testable import YaOKTransports
@testable import YaOKRelayServer

/// The node's side of a relay meeting (§12.9), real node and relay in this process over TLS.
@Suite(.serialized) struct RelayCarryTransportTests {
    /// The carried copies a node holds: identity → budget.
    func carried(_ node: Node) throws -> [[UInt8]: UInt8] {
        try node.withUnlocked { store, _, _ in
            Dictionary(uniqueKeysWithValues: try store.carriedEntries(nowMs: Clock.milliseconds(), limit: 100).map { ($0.id, $0.copyBudget) })
        }
    }

    /// The relay's carry store, read beside the running relay (SQLite WAL).
    func relayHolds(_ relay: LocalRelay) throws -> [[UInt8]: UInt8] {
        let store = try Store(directory: relay.directory + "/carry")
        defer { store.close() }
        return Dictionary(uniqueKeysWithValues: try store.carriedEntries(nowMs: Clock.milliseconds(), limit: 100).map { ($0.id, $0.copyBudget) })
    }

    /// Alice's session deposits her own carried copy (budget 8) at the relay: the relay keeps
    /// a budget-1 copy and Alice keeps all 8. Bob takes the message once; his claim deletes
    /// the relay's copy.
    @Test func depositKeepsOurBudgetAndTheClaimDeletesIt() throws {
        let relay = try LocalRelay()
        relay.carry = true
        defer { relay.remove() }
        try relay.start()
        let pair = try RelayPair()
        defer { pair.close() }
        let id = try pair.alice.send(to: pair.bobID, text: "carried and routed").messageID
        try pair.alice.makeOwnCarriedCopies()  // the engine's batch after the send (§12.6)
        let own = try carried(pair.alice)
        #expect(own.count == 1 && own.values.first == 8)
        try pair.attach(pair.alice, port: relay.port, pin: relay.pin)
        try waitUntil("the relay to hold Alice's copy", timeout: 10) { try !relayHolds(relay).isEmpty }
        #expect(try relayHolds(relay) == own.mapValues { _ in 1 })
        #expect(try carried(pair.alice) == own, "depositing at a relay costs none of the budget")
        try pair.attach(pair.bob, port: relay.port, pin: relay.pin)
        try waitUntil("delivered", timeout: 10) { try pair.alice.messageStatus(id) == .delivered }
        #expect(try pair.bob.texts(pair.aliceID) == ["carried and routed"])
        try waitUntil("the relay to delete Alice's copy", timeout: 10) { try relayHolds(relay)[own.keys.first ?? []] == nil }
    }

    /// A relay of an earlier version ends the session at the first CARRY (§12.9): the
    /// client stops meeting it, and routed mail through it keeps working (one session lost
    /// per client, not one per reconnect).
    @Test func anEarlierRelayEndsOneSessionThenRoutedMailWorks() throws {
        let relay = try LocalRelay { $0.refusesCarryAsUnknownForTesting = true }
        defer { relay.remove() }
        try relay.start()
        let pair = try RelayPair()
        defer { pair.close() }
        let id = try pair.alice.send(to: pair.bobID, text: "through an older relay").messageID
        try pair.attach(pair.alice, port: relay.port, pin: relay.pin)
        try pair.attach(pair.bob, port: relay.port, pin: relay.pin)
        try waitUntil("delivered", timeout: 15) { try pair.alice.messageStatus(id) == .delivered }
        #expect(try pair.bob.texts(pair.aliceID) == ["through an older relay"])
        let rejected = relay.server?.statistics.rejected ?? -1
        #expect(rejected <= 2, "one session each for Alice and Bob ended at CARRY, then no more (\(rejected))")
    }
}
