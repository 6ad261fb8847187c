/// What a full carry store evicts (docs/PROTOCOL.md §10.9), chosen once for every store:
/// the node's SQLite store (`Store+CarryEviction`) and the relay's PostgreSQL one
/// (`PostgresCarryEviction`) each answer the few reads below through their indexes, and
/// this walk decides. A full store pays it on every take, so it reads only what the choice
/// needs, never every row (that cost 40 % of a busy sender's `Node.send`); property tests
/// compare its choice with the rule read plainly over random stores, on both databases.
package enum CarryEviction {
    /// The identities to evict, in the eviction order, so that the store fits `policy`
    /// after `adding` is taken (nil: after a lowered cap, with nothing added): every expired
    /// packet first (by expiry, then identity), then by copy budget, lowest first; within a
    /// budget the packets of the depositor that holds the most go first (the newcomer counts
    /// for its own), then the one taken longest ago, then by identity. nil when room would
    /// need a packet of a higher budget than the newcomer's (a store full of copies still to
    /// spread does not churn for a wait-phase copy); with nothing added every budget may go.
    /// `usage` is what the store holds now (packets, bytes as encoded).
    package static func victims(_ store: some CarryEvictionQueries, usage: (packets: Int, bytes: Int),
                                adding: CarryNewcomer?, nowMs: Int64, policy: CarryPolicy) throws -> [[UInt8]]? {
        var (packets, bytes) = usage
        let addedPackets = adding == nil ? 0 : 1, addedBytes = adding?.size ?? 0
        func fits() -> Bool { packets + addedPackets <= policy.maxPackets && bytes + addedBytes <= policy.maxBytes }
        if fits() { return [] }
        var victims: [[UInt8]] = []
        for old in try store.expiredCarried(nowMs: nowMs) {
            victims.append(old.id)
            packets -= 1
            bytes -= old.size
        }
        let ceiling = adding?.budget ?? Int.max
        // Live packets chosen so far, per depositor: they no longer count as held.
        var chosen: [[UInt8]: Int] = [:]
        var below = 0
        while !fits() {
            guard let span = try store.lowestLiveBudget(above: below, nowMs: nowMs), span.budget <= ceiling else { return nil }
            below = span.budget
            var rank = try BudgetClass(store, span: span, newcomer: adding?.depositor, chosen: chosen, nowMs: nowMs)
            while !fits(), let victim = try rank.next() {
                victims.append(victim.id)
                chosen[victim.depositor, default: 0] += 1
                packets -= 1
                bytes -= victim.size
            }
        }
        return victims
    }
}

/// The packet a take would add: its encoded size, copy budget and depositor.
package struct CarryNewcomer: Sendable {
    package let size: Int
    package let budget: Int
    package let depositor: [UInt8]

    package init(size: Int, budget: Int, depositor: [UInt8]) {
        self.size = size
        self.budget = budget
        self.depositor = depositor
    }
}

/// A live packet the walk may evict.
package struct CarryCandidate: Sendable {
    package let taken: Int64
    package let id: [UInt8]
    package let size: Int
    package let depositor: [UInt8]

    package init(taken: Int64, id: [UInt8], size: Int, depositor: [UInt8]) {
        self.taken = taken
        self.id = id
        self.size = size
        self.depositor = depositor
    }

    /// A place in a budget's order (taken, identity): what comes after a packet chosen.
    package var cursor: CarryCursor { CarryCursor(taken: taken, id: id) }

    /// The order within a budget and depositor: taken first, then the identity as unsigned
    /// bytes, a shorter prefix first (as SQLite compares blobs and PostgreSQL bytea).
    static func precedes(_ a: CarryCandidate, _ b: CarryCandidate) -> Bool {
        a.taken != b.taken ? a.taken < b.taken : a.id.lexicographicallyPrecedes(b.id)
    }
}

/// A position in the order (taken, identity) within one budget; `start` is before every packet.
package struct CarryCursor: Sendable {
    package let taken: Int64
    package let id: [UInt8]

    package init(taken: Int64, id: [UInt8]) {
        self.taken = taken
        self.id = id
    }

    package static let start = CarryCursor(taken: .min, id: [])
}

/// The lowest copy budget a live packet has above some budget, and its depositor when only
/// one has packets in it (the least and greatest depositor there are the same).
package struct CarryBudgetSpan: Sendable {
    package let budget: Int
    package let onlyDepositor: [UInt8]?

    package init(budget: Int, onlyDepositor: [UInt8]?) {
        self.budget = budget
        self.onlyDepositor = onlyDepositor
    }
}

/// The reads the eviction walk makes, each a seek on a store's indexes. "Live" is
/// `expires_ms > now`.
package protocol CarryEvictionQueries {
    /// Every expired packet (id, size), in the order (expiry, identity).
    func expiredCarried(nowMs: Int64) throws -> [(id: [UInt8], size: Int)]
    /// The lowest budget above `budget` that a live packet has, or nil.
    func lowestLiveBudget(above budget: Int, nowMs: Int64) throws -> CarryBudgetSpan?
    /// The live packets held, over every budget, by each depositor that has a packet (live
    /// or not) of `budget`.
    func liveCounts(ofDepositorsIn budget: Int, nowMs: Int64) throws -> [(depositor: [UInt8], packets: Int)]
    /// For each (depositor, cursor), that depositor's first live packet of `budget` after
    /// the cursor in the order (taken, identity), or nil; answers in the order asked.
    func oldest(inBudget budget: Int, of depositors: [(depositor: [UInt8], after: CarryCursor)],
                nowMs: Int64) throws -> [CarryCandidate?]
    /// Up to `limit` live packets of `budget` after `cursor`, in the order (taken, identity).
    func page(inBudget budget: Int, after cursor: CarryCursor, limit: Int, nowMs: Int64) throws -> [CarryCandidate]
}

/// The live packets of one copy budget, handed out in the eviction order: the depositor
/// holding the most first (its count over every budget, the newcomer counting for its own,
/// minus what was chosen already), then taken longest ago, then by identity.
private struct BudgetClass<Store: CarryEvictionQueries> {
    /// Up to this many depositors tied for the most are compared by seeking each one's
    /// oldest packet (in one batch); more (strangers met once each hold 1) by walking the
    /// budget in order to the first packet of any of them, which comes soon when many tie.
    private static var seekLimit: Int { 16 }
    private static var pageSize: Int { 32 }

    private let store: Store
    private let budget: Int
    private let nowMs: Int64
    /// Packets held by each depositor still present in this budget.
    private var held: [[UInt8]: Int]
    /// Each depositor's oldest packet not yet chosen, once read.
    private var heads: [[UInt8]: CarryCandidate] = [:]
    /// Each depositor's last chosen packet: its next one comes after.
    private var cursors: [[UInt8]: CarryCursor] = [:]
    private var chosenHere: Set<[UInt8]> = []
    /// More than `seekLimit` depositors tied for the most: the walk of the budget in order
    /// among those of them not chosen from yet.
    private var wide: Walk?

    /// A walk of the budget in the order (taken, id): the rows read and not yet looked at,
    /// and where the next page starts.
    private struct Walk {
        var wanted: Set<[UInt8]>
        var ahead: ArraySlice<CarryCandidate> = []
        var after = CarryCursor.start
        var exhausted = false
    }

    init(_ store: Store, span: CarryBudgetSpan, newcomer: [UInt8]?, chosen: [[UInt8]: Int], nowMs: Int64) throws {
        self.store = store
        budget = span.budget
        self.nowMs = nowMs
        if let only = span.onlyDepositor {
            // One depositor (a busy sender's own copies): no count to compare.
            held = [only: 1]
            return
        }
        held = [:]
        for (depositor, packets) in try store.liveCounts(ofDepositorsIn: span.budget, nowMs: nowMs) {
            held[depositor] = packets + (depositor == newcomer ? 1 : 0) - chosen[depositor, default: 0]
        }
    }

    /// The next packet to evict from this budget, or nil when none is left.
    mutating func next() throws -> CarryCandidate? {
        while true {
            if var walk = wide, !walk.wanted.isEmpty {
                // Counts only go down, so while some of the depositors tied for the most are
                // left they are still the most, and every packet the walk passed is chosen
                // or not theirs: it goes on from there, not from the budget's start (it read
                // the budget again for each victim: quadratic when a lowered cap or a large
                // newcomer evicts many of a crowd of strangers).
                guard let pick = try firstInOrder(&walk) else {
                    for depositor in walk.wanted { held[depositor] = nil }
                    wide = nil
                    continue
                }
                walk.wanted.remove(pick.depositor)
                wide = walk
                return chose(pick)
            }
            wide = nil
            guard let most = held.values.max() else { return nil }
            let tied = held.filter { $0.value == most }.map(\.key)
            if tied.count > Self.seekLimit {
                wide = Walk(wanted: Set(tied))
                continue
            }
            try readHeads(of: tied)
            guard let pick = tied.compactMap({ heads[$0] }).min(by: CarryCandidate.precedes) else {
                // The tied depositors hold nothing live in this budget (only expired, or
                // everything already chosen): they are out of it.
                for depositor in tied { held[depositor] = nil }
                continue
            }
            return chose(pick)
        }
    }

    private mutating func chose(_ pick: CarryCandidate) -> CarryCandidate {
        held[pick.depositor, default: 1] -= 1
        heads[pick.depositor] = nil
        cursors[pick.depositor] = pick.cursor
        chosenHere.insert(pick.id)
        return pick
    }

    /// Reads, in one batch, the oldest live packet of this budget not yet chosen of each of
    /// `depositors` whose head is not known; one that has none leaves the class.
    private mutating func readHeads(of depositors: [[UInt8]]) throws {
        let unknown = depositors.filter { heads[$0] == nil }
        guard !unknown.isEmpty else { return }
        let found = try store.oldest(inBudget: budget, of: unknown.map { ($0, cursors[$0] ?? .start) }, nowMs: nowMs)
        for (depositor, head) in zip(unknown, found) {
            if let head { heads[depositor] = head } else { held[depositor] = nil }
        }
    }

    /// The next live packet of `walk`, in the order (taken, id), whose depositor it wants and
    /// that is not chosen yet, read a page at a time.
    private func firstInOrder(_ walk: inout Walk) throws -> CarryCandidate? {
        while true {
            while let next = walk.ahead.popFirst() {
                if walk.wanted.contains(next.depositor) && !chosenHere.contains(next.id) { return next }
            }
            guard !walk.exhausted else { return nil }
            let page = try store.page(inBudget: budget, after: walk.after, limit: Self.pageSize, nowMs: nowMs)
            walk.exhausted = page.count < Self.pageSize
            if let last = page.last { walk.after = last.cursor }
            walk.ahead = page[...]
        }
    }
}
