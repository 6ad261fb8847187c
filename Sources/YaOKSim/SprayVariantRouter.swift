/// Variants of binary spray-and-wait measured against the latency target (issue 18: median
/// ≤ 1.25 × epidemic's with ≤ 9 copies a message), as packet models over the same plan,
/// bandwidth and workload as `PacketRouter` (whose `spray` is the baseline and stays as it
/// is). Each variant uses only what a node could know in the real engine, unless marked
/// otherwise: the sender knows its recipient; every node knows which of the people it meets
/// are its contacts (links reveal an identity only to contacts, PROTOCOL.md §5.8); a
/// carrier knows a packet's budget, expiry and when it took it. docs/SIMULATOR.md ("Latency
/// against copies") says what each variant would leak and what it measured.
public final class SprayVariantRouter: Router {
    /// To whom a holder with more than one copy hands some, and how many.
    public struct Policy: Sendable, Equatable {
        public var name: String
        /// The budget a packet starts with (binary spray: 8).
        public var copies = 8
        /// Whose hand-overs the contact/stranger fractions govern; other holders hand half.
        public var scope: Scope = .everyone
        /// The fraction of its c copies a holder hands a peer that is its contact, and one
        /// that is not (0: none). At least 1 and at most c − 1 when above 0; binary: ½, ½.
        public var contactSplit = 0.5
        public var strangerSplit = 0.5
        /// Wait phase: a carrier (not the sender) with a single copy moves it (keeps none)
        /// to a contact of its own that never held it, at most this many moves a message.
        public var waitMovesToContacts = 0
        /// Re-spray: this many seconds after writing, a sender whose message is not yet
        /// delivered (it would learn so from the end-to-end acknowledgement; the model
        /// reads delivery at once, a bound in the variant's favour) adds `resprayCopies`.
        public var resprayAfter: Double?
        public var resprayCopies = 0
        /// Spray only to peers the holder met fewer than this many times in the last 72 h
        /// (a destination-free "novelty" rule in the spirit of Bubble Rap's communities).
        /// NEEDS a stable identity of strangers: the real engine cannot do it privately.
        public var unfamiliarBelow: Int?
        /// Destination-aware reference (leaks the recipient to carriers, as PRoPHET and
        /// spray-and-focus do): a single copy moves to a peer that met the recipient more
        /// recently than its holder. What knowing the destination would buy; not buildable.
        public var oracleFocus = false
        /// Not a router: the floor of destination-blind placement. At writing, L − 1 single
        /// copies appear at once at distinct random nodes other than the sender and the
        /// recipient (no meeting needed), and wait. No blind policy places its copies better
        /// on a plan where every node meets as often as every other.
        public var blindFloor = false

        public enum Scope: Sendable, Equatable { case sender, everyone }

        public init(name: String) { self.name = name }

        /// The named variants of the `--router` option; `nil` for an unknown name.
        public static func named(_ name: String, copies: Int) -> Policy? {
            var p = Policy(name: name)
            p.copies = copies
            switch name {
            case "social-sender":
                // (a) The sender sprays only to its own contacts; carriers as binary.
                p.scope = .sender; p.strangerSplit = 0
            case "social-all":
                // (a) Every holder sprays only to its own contacts.
                p.strangerSplit = 0
            case "social-weigh":
                // (a) Every holder hands a contact ¾ of its copies, a stranger ¼.
                p.contactSplit = 0.75; p.strangerSplit = 0.25
            case "social-sender-weigh":
                // (a) The sender hands its contacts ¾, strangers ¼; carriers binary.
                p.scope = .sender; p.contactSplit = 0.75; p.strangerSplit = 0.25
            case "source":
                // (b) Source spray-and-wait: the sender hands single copies to the first
                // L − 1 people it meets; carriers wait.
                p.scope = .sender; p.contactSplit = 1e-9; p.strangerSplit = 1e-9
            case "front":
                // (b) Uneven: every holder hands ¾ of its copies (more copies early, to the
                // first peers met).
                p.contactSplit = 0.75; p.strangerSplit = 0.75
            case "wait-contacts":
                // (c) Binary spray, then a single copy moves on to a contact of its holder.
                p.waitMovesToContacts = 2
            case "respray":
                // (d) Binary spray of L; after 3 h undelivered, the sender sprays L more.
                p.resprayAfter = 3 * 3600; p.resprayCopies = copies
            case "unfamiliar":
                // (e) Spray only to peers met fewer than 2 times in the last 72 h (leaks: needs
                // a stable identity for strangers).
                p.unfamiliarBelow = 2
            case "oracle-focus":
                // (e) Destination-aware reference (leaks the recipient).
                p.oracleFocus = true
            case "blind-floor":
                p.blindFloor = true
            default:
                return nil
            }
            return p
        }

        /// Every named variant, in table order.
        public static let names = ["social-sender", "social-all", "social-weigh", "social-sender-weigh", "source", "front",
                                   "wait-contacts", "respray", "unfamiliar", "oracle-focus", "blind-floor"]
    }

    private struct Copy: ExpiringCopy {
        var copies: Int
        let expires: Double
        let own: Bool
    }

    public let policy: Policy
    public var name: String { policy.name }
    private var stores: [[Int: Copy]] = []
    private var seen: [Set<Int>] = []
    private var contacts: [Set<Int>] = []
    private var delivered: Set<Int> = []
    private var resprayed: Set<Int> = []
    private var moves: [Int: Int] = [:]
    /// Start times of each node's meetings with each peer (novelty), and the last one (focus).
    private var meetings: [[Int: [Double]]] = []
    private var lastMet: [[Int: Double]] = []

    public init(_ policy: Policy) { self.policy = policy }

    public func start(_ run: RunContext) throws {
        let n = run.plan.nodeCount
        stores = Array(repeating: [:], count: n)
        seen = Array(repeating: [], count: n)
        contacts = Array(repeating: [], count: n)
        for pair in run.workload.friendships where pair.b < n {
            contacts[pair.a].insert(pair.b)
            contacts[pair.b].insert(pair.a)
        }
        delivered = []; resprayed = []; moves = [:]
        meetings = Array(repeating: [:], count: n)
        lastMet = Array(repeating: [:], count: n)
    }

    public func created(_ message: SimMessage, active: [ActiveEncounter], run: RunContext) throws {
        stores[message.from][message.id] = Copy(copies: max(policy.copies, 1),
                                                expires: message.created + run.workload.lifetime, own: true)
        seen[message.from].insert(message.id)
        run.recorder.store(message.from, packets: stores[message.from].count)
        if policy.blindFloor { place(message, run: run) }
        for e in active { exchange(e, run: run) }
    }

    public func contactUp(_ e: ActiveEncounter, run: RunContext) throws {
        // What each knew before this meeting decides; the meeting is then remembered.
        exchange(e, run: run)
        let now = run.now
        if policy.unfamiliarBelow != nil {
            meetings[e.a][e.b, default: []].append(now)
            meetings[e.b][e.a, default: []].append(now)
        }
        lastMet[e.a][e.b] = now
        lastMet[e.b][e.a] = now
    }

    /// The blind floor: L − 1 copies at random nodes at once (a stream per message).
    private func place(_ m: SimMessage, run: RunContext) {
        let n = run.plan.nodeCount
        guard n > 2 else { return }
        var rng = SimRandom(seed: UInt64(m.id), stream: "blind-floor")
        stores[m.from][m.id]?.copies = 1
        var placed = 0, tries = 0
        while placed < min(policy.copies - 1, n - 2), tries < 100 * policy.copies {
            tries += 1
            let y = rng.below(n)
            if y == m.from || y == m.to || seen[y].contains(m.id) { continue }
            placed += 1
            seen[y].insert(m.id)
            stores[y][m.id] = Copy(copies: 1, expires: m.created + run.workload.lifetime, own: false)
            run.recorder.relayed(m, from: m.from, to: y, at: m.created, bytes: m.wireBytes)
            run.recorder.store(y, packets: stores[y].count)
        }
    }

    public func contactDown(_ encounter: ActiveEncounter, run: RunContext) throws {}
    public func finish(_ run: RunContext) throws {}

    private func exchange(_ e: ActiveEncounter, run: RunContext) {
        send(from: e.a, to: e.b, over: e, run: run)
        send(from: e.b, to: e.a, over: e, run: run)
    }

    private func familiar(_ x: Int, _ y: Int, now: Double) -> Int {
        (meetings[x][y] ?? []).reduce(0) { $0 + ($1 > now - 72 * 3600 ? 1 : 0) }
    }

    /// How many of `c` copies `x` hands `y` in the spray phase (0: none).
    private func share(_ c: Int, own: Bool, from x: Int, to y: Int, now: Double) -> Int {
        guard c > 1 else { return 0 }
        if let k = policy.unfamiliarBelow, familiar(x, y, now: now) >= k { return 0 }
        let governed = policy.scope == .everyone || own
        let fraction = governed ? (contacts[x].contains(y) ? policy.contactSplit : policy.strangerSplit) : 0.5
        guard fraction > 0 else { return 0 }
        return min(c - 1, max(1, Int((Double(c) * fraction).rounded(.down))))
    }

    private func send(from x: Int, to y: Int, over e: ActiveEncounter, run: RunContext) {
        let now = run.now
        let messages = run.workload.messages
        guard let lacking = mailFirst(from: x, to: y, over: e, run: run, stores: &stores, seen: &seen,
                                      delivered: { delivered.insert($0) }) else { return }
        for id in lacking {
            guard var copy = stores[x][id] else { continue }
            let m = messages[id]
            if copy.own, let after = policy.resprayAfter, now - m.created >= after,
               !delivered.contains(id), !resprayed.contains(id) {
                resprayed.insert(id)
                copy.copies += policy.resprayCopies
                stores[x][id] = copy
            }
            var given = share(copy.copies, own: copy.own, from: x, to: y, now: now)
            var move = false
            if given == 0, copy.copies == 1, !copy.own {
                if policy.waitMovesToContacts > moves[id, default: 0], contacts[x].contains(y) {
                    move = true
                } else if policy.oracleFocus, let theirs = lastMet[y][m.to], theirs > lastMet[x][m.to] ?? -1 {
                    move = true
                }
                if move { given = 1 }
            }
            guard given > 0 else { continue }
            guard let arrival = e.transfer(m.wireBytes, from: x, now: now) else { return }
            run.recorder.relayed(m, from: x, to: y, at: arrival, bytes: m.wireBytes)
            seen[y].insert(id)
            if move {
                moves[id, default: 0] += 1
                stores[x][id] = nil
            } else {
                stores[x][id]?.copies = copy.copies - given
            }
            stores[y][id] = Copy(copies: given, expires: copy.expires, own: false)
            run.recorder.store(y, packets: stores[y].count)
        }
    }
}
