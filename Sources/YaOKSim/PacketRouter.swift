/// The packet-level models: no keys, no database, only who holds which packet, how many
/// copies it may still hand out and when it expires, over the same plan, bandwidth and
/// workload as the real nodes. At each meeting, each side first hands the other what is
/// addressed to it, then what the policy forwards, oldest message first, while the
/// encounter has time (`ActiveEncounter.transfer`). Baselines, as the ONE simulator's
/// routers of the same names behave: no acknowledgements, a copy lives until it expires.
public final class PacketRouter: Router {
    public enum Policy: Sendable, Equatable {
        /// Only the sender's own copy, handed to the recipient when they meet (today).
        case direct
        /// Every node copies every packet to every node it meets that never had it; no store
        /// limit (Vahdat and Becker's epidemic routing, the upper bound on delivery).
        case epidemic
        /// A bitchat-like courier: the sender hands single copies to the first `copies`
        /// people it meets; each keeps it at most `lifetime` seconds from its writing, in a
        /// store of `store` packets (the oldest carried one leaves for a new one), and gives
        /// it only to its recipient.
        case courier(copies: Int, lifetime: Double, store: Int)
        /// Binary spray-and-wait (Spyropoulos et al.): a packet starts with `copies`; a holder
        /// with more than one gives half (rounded down) to a node without it; with one, it
        /// waits to meet the recipient.
        case spray(copies: Int)

        public var name: String {
            switch self {
            case .direct: return "direct-model"
            case .epidemic: return "epidemic"
            case .courier: return "courier"
            case .spray(let l): return "spray(L=\(l))"
            }
        }

        /// bitchat's courier figures: 4 copies, 24 hours, 40 packets.
        public static let bitchatCourier = Policy.courier(copies: 4, lifetime: 86_400, store: 40)
    }

    private struct Copy: ExpiringCopy {
        var copies: Int
        let expires: Double
        /// The sender's own (not a carried copy): never evicted by the courier's store limit.
        let own: Bool
        /// When this node took it (the courier evicts the oldest carried copy).
        let since: Double
    }

    public let policy: Policy
    public var name: String { policy.name }
    private var stores: [[Int: Copy]] = []
    /// Messages each node has held (or received): it takes none of them again.
    private var seen: [Set<Int>] = []
    /// For the courier: how many carriers each message's sender has given it to.
    private var handedOut: [Int: Int] = [:]

    public init(_ policy: Policy) { self.policy = policy }

    public func start(_ run: RunContext) throws {
        stores = Array(repeating: [:], count: run.plan.nodeCount)
        seen = Array(repeating: [], count: run.plan.nodeCount)
        handedOut = [:]
    }

    public func created(_ message: SimMessage, active: [ActiveEncounter], run: RunContext) throws {
        let copies: Int
        switch policy {
        case .direct, .epidemic: copies = 1
        case .courier(let n, _, _): copies = n
        case .spray(let l): copies = max(l, 1)
        }
        stores[message.from][message.id] = Copy(copies: copies, expires: message.created + run.workload.lifetime,
                                                own: true, since: message.created)
        seen[message.from].insert(message.id)
        run.recorder.store(message.from, packets: stores[message.from].count)
        for e in active { exchange(e, run: run) }
    }

    public func contactUp(_ encounter: ActiveEncounter, run: RunContext) throws { exchange(encounter, run: run) }
    public func contactDown(_ encounter: ActiveEncounter, run: RunContext) throws {}
    public func finish(_ run: RunContext) throws {}

    private func exchange(_ e: ActiveEncounter, run: RunContext) {
        send(from: e.a, to: e.b, over: e, run: run)
        send(from: e.b, to: e.a, over: e, run: run)
    }

    private func send(from x: Int, to y: Int, over e: ActiveEncounter, run: RunContext) {
        let now = run.now
        let messages = run.workload.messages
        guard let lacking = mailFirst(from: x, to: y, over: e, run: run, stores: &stores, seen: &seen) else { return }
        for id in lacking {
            guard let copy = stores[x][id] else { continue }
            let m = messages[id]
            let given: Int
            switch policy {
            case .direct:
                return
            case .epidemic:
                given = 1
            case .spray:
                guard copy.copies > 1 else { continue }
                given = copy.copies / 2
            case .courier(let n, _, _):
                guard copy.own, handedOut[id, default: 0] < n else { continue }
                given = 1
            }
            guard let arrival = e.transfer(m.wireBytes, from: x, now: now) else { return }
            run.recorder.relayed(m, from: x, to: y, at: arrival, bytes: m.wireBytes)
            seen[y].insert(id)
            var expires = copy.expires
            switch policy {
            case .spray:
                stores[x][id]?.copies = copy.copies - given
            case .courier(_, let lifetime, let capacity):
                handedOut[id, default: 0] += 1
                expires = min(expires, m.created + lifetime)
                evictForCourier(at: y, capacity: capacity, run: run)
            default:
                break
            }
            if expires > now {
                stores[y][id] = Copy(copies: given, expires: expires, own: false, since: now)
            }
            run.recorder.store(y, packets: stores[y].count)
        }
    }

    /// Makes room for one more carried packet at `node`: the oldest carried copy leaves.
    private func evictForCourier(at node: Int, capacity: Int, run: RunContext) {
        let carried = stores[node].filter { !$0.value.own }
        guard carried.count >= capacity,
              let oldest = carried.min(by: { ($0.value.since, $0.key) < ($1.value.since, $1.key) }) else { return }
        stores[node][oldest.key] = nil
        run.recorder.note(run.now, "evict m\(oldest.key) at \(node)")
    }
}
