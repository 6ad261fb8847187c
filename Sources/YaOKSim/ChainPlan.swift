/// A chain: node i meets only i−1 and i+1, so node 0 and node 2 (A and C) never meet and
/// anything between them must be carried by node 1 (B). The plain case for store-carry-forward:
/// direct delivery reaches only neighbours. Each neighbouring pair meets about every
/// `meanGap` seconds (exponential gaps) for about `meanDuration`.
public struct ChainPlan: Sendable {
    public var nodes: Int
    public var days: Double
    public var meanGap: Double = 4 * 3600
    public var meanDuration: Double = 300
    public var minimumDuration: Double = 5
    public var bandwidth: Double = Defaults.bandwidth

    public init(nodes: Int, days: Double) {
        self.nodes = nodes
        self.days = days
    }

    public func plan(seed: UInt64) throws -> ContactPlan {
        var rng = SimRandom(seed: seed, stream: "chain")
        let duration = days * 86_400
        var encounters: [Encounter] = []
        for a in 0..<max(nodes - 1, 0) {
            var t = rng.exponential(mean: meanGap)
            while t < duration {
                let length = max(minimumDuration, rng.exponential(mean: meanDuration))
                encounters.append(Encounter(a: a, b: a + 1, start: t, end: min(t + length, duration), bandwidth: bandwidth))
                t += length + rng.exponential(mean: meanGap)
            }
        }
        return try ContactPlan(name: "chain", nodeCount: nodes, duration: duration, encounters: encounters)
    }
}
