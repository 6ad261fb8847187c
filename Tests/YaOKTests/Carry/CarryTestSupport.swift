import Foundation
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// A carry-store test bench: a store in a fresh directory, a clock the test moves, and
/// packets with random (opaque) payloads, as a carrier sees them.
final class CarryBench {
    let dir = TempDir()
    var store: Store
    var now: Int64 = 1_800_000_000_000

    init() throws { store = try Store(directory: dir.path) }

    func reopen() throws {
        store.close()
        store = try Store(directory: dir.path)
    }

    func finish() {
        store.close()
        dir.remove()
    }

    /// A packet expiring `lifetimeMs` from now (rounded up to the hour), whose claim is `claim`.
    func packet(lifetimeMs: Int64 = 86_400_000, budget: UInt8 = 8, hop: UInt8 = 8, payloadLength: Int = 200,
                claim: [UInt8] = PurgeClaim.random()) throws -> CarriedPacket {
        try CarriedPacket(hopLimit: hop, copyBudget: budget,
                          expiryHour: CarriedPacket.expiryHour(createdMs: now, lifetimeMs: lifetimeMs),
                          routingTag: RoutingTag(value: UInt64.random(in: .min ... .max)),
                          claimHash: PurgeClaim.hash(claim), payload: Sodium.randomBytes(payloadLength))
    }

    @discardableResult
    func take(_ packet: CarriedPacket, from depositor: CarryDepositor = CarryBench.alice,
              policy: CarryPolicy = .default) throws -> CarryTake {
        try store.takeCarried(packet.encode(), from: depositor, nowMs: now, policy: policy)
    }

    /// Takes `packet` and fails the test unless it was taken.
    @discardableResult
    func mustTake(_ packet: CarriedPacket, from depositor: CarryDepositor = CarryBench.alice,
                  policy: CarryPolicy = .default) throws -> CarriedEntry {
        let outcome = try take(packet, from: depositor, policy: policy)
        guard case .taken(let entry, _) = outcome else {
            throw YaOKError(.internal, "expected the packet to be taken, got \(outcome.message)")
        }
        return entry
    }

    func heldIDs() throws -> Set<[UInt8]> {
        Set(try store.carriedKeys(nowMs: now, limit: 1_000_000).map(\.id))
    }

    static let alice = CarryDepositor.random()
    static let bob = CarryDepositor.random()
}
