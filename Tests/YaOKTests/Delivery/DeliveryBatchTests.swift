import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// The engine's one rollback path (`DeliveryEngine.batch`): a batch whose transaction fails
/// took nothing, so nothing it decided may go out — while what was decided before it, and
/// the links it found broken, stay.
@Suite struct DeliveryBatchTests {
    struct Failure: Error {}

    @Test func aFailedBatchDropsItsUnitsCommandsEventsAndWritesButKeepsItsCloses() throws {
        let pair = try Pair()
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { pipe.initiator.isAuthenticated })
        let link = pipe.initiator
        let carrier = Carrier(id: 999, transport: "test", route: "test", relay: [1], node: pair.alice,
                              callbacks: CarrierCallbacks(post: { _ in }, release: { _ in }, mailboxesChanged: {}, closed: { _ in }))
        let seen = try MessageID(bytes: [UInt8](repeating: 7, count: 16))
        let left = try pair.alice.withStore { store, s -> [Int] in
            let before = s.delivery.effects
            s.delivery.effects.events.append(.contactsChanged(contactID: 1))  // decided before the batch
            #expect(throws: Failure.self) {
                try s.delivery.batch(store) { engine in
                    engine.effects.units.append((link, [1, 2, 3]))
                    engine.effects.carrierCommands.append((carrier, .mailboxesChanged))
                    engine.effects.events.append(.contactsChanged(contactID: 2))
                    engine.effects.closes.append((link, "broke the protocol"))
                    try store.setSetting("batch_test", 1)
                    try store.seen.record(seen, expiresAtMs: engine.now + 60_000, nowMs: engine.now)
                    throw Failure()
                }
            }
            let after = s.delivery.effects
            // Nothing of this test goes out.
            s.delivery.effects = before
            return [after.units.count - before.units.count, after.carrierCommands.count - before.carrierCommands.count,
                    after.events.count - before.events.count, after.closes.count - before.closes.count,
                    try store.setting("batch_test") == nil ? 0 : 1, try store.seen.contains(seen) ? 1 : 0]
        }
        // units, commands: none; events: the one from before the batch; closes: the batch's;
        // the setting and the seen record: rolled back.
        #expect(left == [0, 0, 1, 1, 0, 0])
    }
}
