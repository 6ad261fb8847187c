/// One message of a run: `from` writes `size` bytes of text to `to` at `created` seconds.
public struct SimMessage: Sendable, Equatable {
    public let id: Int
    public let from: Int
    public let to: Int
    public let created: Double
    public let size: Int

    /// Bytes a packet of this message takes on a link in the packet-level models: the text
    /// padded to a 256-byte bucket plus 128 bytes of header, seal and framing. Close to the
    /// real packet (docs/PROTOCOL.md §3 pads and seals), which the real-node router sends.
    public var wireBytes: Int { (size + 255) / 256 * 256 + 128 }
}

/// Who writes to whom, when, and how much. Each person of the plan (everyone who meets
/// someone) has a few friends (messengers carry
/// messages between contacts) and writes to one of them at random moments (a Poisson
/// process of `perNodePerDay`); most texts are short, one in five up to 2 KB. Messages are
/// written only while at least min(lifetime, half the run) remains, so every message has
/// time to arrive and the delivery probability compares routers rather than the run's end.
public struct Workload: Sendable, Equatable {
    public let messages: [SimMessage]
    /// Seconds a message may take: past it, it counts as undelivered and is dropped.
    public let lifetime: Double
    /// The pairs that are contacts of each other (a < b).
    public let friendships: [NodePair]

    public init(messages: [SimMessage], lifetime: Double, friendships: [NodePair]) {
        self.messages = messages
        self.lifetime = lifetime
        self.friendships = friendships
    }

    public struct Options: Sendable {
        public var perNodePerDay: Double = 4
        public var friends = 5
        /// Seconds: today's engine keeps a message 7 days (SealedMessage.defaultLifetimeMinutes).
        public var lifetime: Double = 7 * 86_400
        /// The share of friends drawn from one's own community (`community` says which), as
        /// in community models built on a social network, where ties drive who meets whom
        /// (Musolesi and Mascolo's CMM; Eagle, Pentland and Lazer find friends' phones in
        /// proximity far more than others'). 0, the default: friends are drawn from everyone,
        /// independently of who meets whom.
        public var localFriends = 0.0
        public var community: (@Sendable (Int) -> Int)?
        public init() {}
    }

    public static func generate(plan: ContactPlan, seed: UInt64, options: Options = Options()) -> Workload {
        var rng = SimRandom(seed: seed, stream: "workload")
        let n = plan.nodeCount
        var friends = [[Int]](repeating: [], count: n)
        var pairs = Set<NodePair>()
        // Only people the plan has meet anyone (a trace's ids can be sparse).
        let present = Set(plan.encounters.flatMap { [$0.a, $0.b] }).sorted()
        // The variant draws local friends from a stream of its own, so the default
        // workload's draws (and every published hash) are unchanged.
        var local = SimRandom(seed: seed, stream: "workload-local-friends")
        for i in present {
            let want = min(options.friends, present.count - 1)
            let neighbours = options.community.map { community in present.filter { $0 != i && community($0) == community(i) } } ?? []
            var tries = 0
            while friends[i].count < want, tries < 50 * want {
                tries += 1
                let j = !neighbours.isEmpty && local.unit() < options.localFriends
                    ? neighbours[local.below(neighbours.count)] : present[rng.below(present.count)]
                if j == i || friends[i].contains(j) { continue }
                friends[i].append(j)
                pairs.insert(NodePair(i, j))
            }
        }
        let window = plan.duration - min(options.lifetime, plan.duration / 2)
        var drafts: [(created: Double, from: Int, to: Int, size: Int)] = []
        let meanGap = 86_400 / max(options.perNodePerDay, 1e-9)
        for i in 0..<n where !friends[i].isEmpty {
            var t = rng.exponential(mean: meanGap)
            while t < window {
                let to = friends[i][rng.below(friends[i].count)]
                let size = rng.below(5) == 0 ? 200 + rng.below(1801) : 20 + rng.below(181)
                drafts.append((t, i, to, size))
                t += rng.exponential(mean: meanGap)
            }
        }
        drafts.sort { ($0.created, $0.from, $0.to) < ($1.created, $1.from, $1.to) }
        let messages = drafts.enumerated().map { SimMessage(id: $0, from: $1.from, to: $1.to, created: $1.created, size: $1.size) }
        return Workload(messages: messages, lifetime: options.lifetime,
                        friendships: pairs.sorted { ($0.a, $0.b) < ($1.a, $1.b) })
    }
}
