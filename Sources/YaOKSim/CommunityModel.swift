/// A community model: people belong to groups (a household, a workplace, a camp block) and
/// meet members of their own group often and others rarely, as in the community-based
/// mobility models used for DTN evaluation (Hsu et al., "Modeling time-variant user mobility
/// in wireless mobile networks"; Musolesi and Mascolo's CMM). Each pair meets as a Poisson
/// process: mean gap `insideGap` within a community, `outsideGap` across; each meeting lasts
/// an exponentially distributed time (mean `meanDuration`, at least `minimumDuration`).
public struct CommunityModel: Sendable {
    public var nodes: Int
    public var days: Double
    public var communitySize = 10
    /// Seconds between two meetings of the same pair.
    public var insideGap: Double = 8 * 3600
    public var outsideGap: Double = 6 * 86_400
    public var meanDuration: Double = 120
    public var minimumDuration: Double = 2
    public var bandwidth: Double = Defaults.bandwidth

    public init(nodes: Int, days: Double) {
        self.nodes = nodes
        self.days = days
    }

    /// Node `i`'s community.
    public func community(of i: Int) -> Int { i / max(communitySize, 1) }

    public func plan(seed: UInt64) throws -> ContactPlan {
        var rng = SimRandom(seed: seed, stream: "community")
        let duration = days * 86_400
        var encounters: [Encounter] = []
        for a in 0..<nodes {
            for b in (a + 1)..<max(nodes, a + 1) {
                let gap = community(of: a) == community(of: b) ? insideGap : outsideGap
                var t = rng.exponential(mean: gap)
                while t < duration {
                    let length = max(minimumDuration, rng.exponential(mean: meanDuration))
                    encounters.append(Encounter(a: a, b: b, start: t, end: min(t + length, duration), bandwidth: bandwidth))
                    t += length + rng.exponential(mean: gap)
                }
            }
        }
        return try ContactPlan(name: "community", nodeCount: nodes, duration: duration, encounters: encounters)
    }
}

/// Figures shared by the generators and importers unless a run sets its own.
public enum Defaults {
    /// Bytes per second each way: a Bluetooth LE link of a few hundred KB/s, as the issue
    /// and the BLE transport's measurements put it.
    public static let bandwidth: Double = 250_000
}
