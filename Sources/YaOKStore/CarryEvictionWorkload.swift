import YaOKSupport
import YaOKWire
import YaOKCrypto

/// The full stores the two carry-eviction benchmarks time, made alike so that their figures
/// compare (`yaok-bench carry-evict` on the node's SQLite store, `yaok-relay-load carry` on
/// the relay's PostgreSQL one): the store at its 2,000-packet cap, then takes of budget 8
/// that each evict one packet. Three shapes of a full store: one depositor at one budget (a
/// busy sender's own copies), 20 depositors of 100 at budgets 1 to 8 (meetings), 2,000
/// depositors of one packet each (strangers met once). Seeded, so two builds time the same
/// stores.
package struct CarryEvictionWorkload {
    package struct Shape: Sendable {
        package let label: String
        package let depositors: Int
        package let budgets: [UInt8]
    }

    package static let shapes = [
        Shape(label: "own copies: 1 depositor, budget 8", depositors: 1, budgets: [8]),
        Shape(label: "meetings: 20 depositors, budgets 1-8", depositors: 20, budgets: Array(1...8)),
        Shape(label: "strangers: 2,000 depositors, budgets 1-8", depositors: 2_000, budgets: Array(1...8)),
    ]

    /// The default caps, and quotas no take reaches.
    package static let policy = CarryPolicy(maxPackets: 2_000, maxBytes: 32 << 20, depositorPacketsPerHour: 1 << 30,
                                            depositorBytesPerHour: 1 << 50)
    /// Takes timed into the full store.
    package static let newcomerCount = 300

    package let shape: Shape
    package let depositors: [CarryDepositor]
    private var rng = SeededRandom(seed: 20)

    package init(_ shape: Shape) throws {
        self.shape = shape
        var rng = rng
        depositors = try (0..<shape.depositors).map { i in
            try CarryDepositor((0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) } + [UInt8(i & 0xff)])
        }
        self.rng = rng
    }

    /// The `i`th packet that fills the store, made at `nowMs`, and who offers it: budgets and
    /// depositors in turn.
    package mutating func filling(_ i: Int, nowMs: Int64) throws -> (bytes: [UInt8], depositor: CarryDepositor) {
        (try packet(budget: shape.budgets[i % shape.budgets.count], nowMs: nowMs), depositors[i % depositors.count])
    }

    /// The newcomers taken into the full store (budget 8, made at `nowMs`); the `i`th is
    /// offered by `depositors[i % depositors.count]`.
    package mutating func newcomers(nowMs: Int64) throws -> [[UInt8]] {
        try (0..<Self.newcomerCount).map { _ in try packet(budget: 8, nowMs: nowMs) }
    }

    /// A packet of 440 payload bytes expiring 1 to 336 hours after `nowMs`.
    private mutating func packet(budget: UInt8, nowMs: Int64) throws -> [UInt8] {
        try CarriedPacket(hopLimit: 8, copyBudget: budget,
                          expiryHour: CarriedPacket.expiryHour(createdMs: nowMs, lifetimeMs: Int64.random(in: 1...336, using: &rng) * 3_600_000),
                          routingTag: RoutingTag(value: rng.next()),
                          claimHash: PurgeClaim.hash((0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }),
                          payload: (0..<440).map { _ in UInt8.random(in: 0...255, using: &rng) }).encode()
    }
}
