import YaOKSupport

/// Reassembles fragments from one peer (docs/PROTOCOL.md §4.7). Keep one per link and make
/// a new one when the link reconnects (the peer's new Fragmenter starts at a random group
/// number, which could meet a remembered completed group of the old link). It is the unit
/// of the memory bound. Not thread-safe.
///
/// Robust to any delivery order, to duplicates (ignored, also after completion: the last
/// 64 completed groups are remembered for `timeoutMs`), and to loss (an incomplete group
/// is dropped `timeoutMs` after its last new fragment). Time is passed in, never read, so
/// tests need no sleeping. Pure Swift (fuzz build).
///
/// Memory bound: every stored fragment costs its data plus `fragmentCost`, every group
/// `groupCost`; before storing, the least recently progressing other groups are evicted
/// until the total fits `budget`. A group that cannot fit the budget even alone is refused,
/// so a flood of fragments that never complete cannot hold more than `budget` bytes.
public struct Reassembler {
    /// Bookkeeping charged per stored fragment and per group (array header, dictionary
    /// slot, group record), so that many tiny fragments cannot escape the budget.
    public static let fragmentCost = 64
    public static let groupCost = 256

    public let budget: Int
    public let timeoutMs: Int64
    public private(set) var memoryInUse = 0

    private struct Group {
        let count: UInt16
        /// Length of every fragment but the last, once one such fragment is seen.
        var chunkLength: Int?
        var lastLength: Int?
        var pieces: [UInt16: [UInt8]] = [:]
        var cost: Int
        var lastProgressMs: Int64
    }
    private var groups: [UInt16: Group] = [:]
    /// Recently completed groups and when: a duplicate fragment that arrives after its
    /// packet completed is ignored instead of starting a group that can never complete.
    private var completed: [UInt16: Int64] = [:]
    /// No group or completed record can time out before this instant, so `expire` skips its
    /// scan until then (a lower bound: progress only pushes deadlines later).
    private var nextExpiryMs: Int64 = .max
    static let maxCompletedRemembered = 64

    /// `budget` must hold at least one maximal packet in fragments of the minimum MTU.
    public static let defaultBudget = 256 * 1024
    public static let defaultTimeoutMs: Int64 = 30_000

    public init(budget: Int = defaultBudget, timeoutMs: Int64 = defaultTimeoutMs) throws {
        guard budget >= Self.groupCost + Self.fragmentCost + 1 else {
            throw YaOKError(.invalidArgument, "Reassembly budget is too small")
        }
        self.budget = budget
        self.timeoutMs = timeoutMs
    }

    /// Groups currently held (incomplete packets).
    public var pendingGroups: Int { groups.count }

    /// Takes one fragment. Returns the reassembled packet when this fragment completes it,
    /// nil otherwise (stored, or a duplicate). Throws `fragmentInvalid` when it contradicts
    /// what is stored for its group (other count, other length, other bytes for an index
    /// already held), or when the group could never fit the budget; the group is dropped.
    public mutating func receive(_ fragment: Fragment, nowMs: Int64) throws -> [UInt8]? {
        expire(nowMs: nowMs)
        if completed[fragment.group] != nil { return nil }
        let isLast = fragment.index == fragment.count - 1
        let length = fragment.data.count
        var group = groups[fragment.group]
            ?? Group(count: fragment.count, cost: Self.groupCost, lastProgressMs: nowMs)
        do {
            guard group.count == fragment.count else {
                throw YaOKError(.fragmentInvalid, "Fragment count \(fragment.count) differs from \(group.count) for group \(fragment.group)")
            }
            if let existing = group.pieces[fragment.index] {
                guard existing == fragment.data else {
                    throw YaOKError(.fragmentInvalid, "Fragment \(fragment.index) of group \(fragment.group) arrived twice with different bytes")
                }
                return nil  // a duplicate: already held
            }
            if isLast { group.lastLength = length } else {
                guard group.chunkLength == nil || group.chunkLength == length else {
                    throw YaOKError(.fragmentInvalid, "Fragment lengths differ within group \(fragment.group)")
                }
                group.chunkLength = length
            }
            try Self.checkShape(group, fragment.group)
            // The whole packet, once complete, must fit the budget; refuse now if it cannot.
            if let chunk = group.chunkLength {
                let minimum = Self.groupCost + Int(group.count) * Self.fragmentCost + (Int(group.count) - 1) * chunk + 1
                guard minimum <= budget else {
                    throw YaOKError(.fragmentInvalid, "Group \(fragment.group) needs more than the reassembly budget of \(budget) bytes")
                }
            }
        } catch {
            drop(fragment.group)
            throw error
        }

        let cost = length + Self.fragmentCost
        let isNew = groups[fragment.group] == nil
        makeRoom(for: cost + (isNew ? group.cost : 0), keeping: fragment.group)
        guard memoryInUse + cost + (isNew ? group.cost : 0) <= budget else {
            // Only reachable with a budget smaller than one fragment: refuse rather than exceed.
            drop(fragment.group)
            throw YaOKError(.fragmentInvalid, "Fragment does not fit the reassembly budget of \(budget) bytes")
        }
        group.pieces[fragment.index] = fragment.data
        group.cost += cost
        group.lastProgressMs = nowMs
        memoryInUse += cost + (isNew ? Self.groupCost : 0)
        noteDeadline(from: nowMs)

        guard group.pieces.count == Int(group.count) else {
            groups[fragment.group] = group
            return nil
        }
        // Complete: release it (the local copy holds this fragment's cost, the stored one not).
        groups.removeValue(forKey: fragment.group)
        memoryInUse -= group.cost
        remember(fragment.group, nowMs: nowMs)
        var packet: [UInt8] = []
        packet.reserveCapacity((Int(group.count) - 1) * (group.chunkLength ?? 0) + (group.lastLength ?? 0))
        for i in 0..<group.count {
            guard let piece = group.pieces[i] else { return nil }  // cannot happen: count matched
            packet += piece
        }
        // A fragment may not carry another fragment: that would let nesting bypass the bounds.
        guard packet.count >= 2, packet[1] != PacketType.fragment.rawValue else {
            throw YaOKError(.fragmentInvalid, "A reassembled packet cannot itself be a fragment")
        }
        return packet
    }

    /// Chunk lengths must agree: the last fragment is 1...chunk bytes, and the whole packet
    /// must stay within the packet limit.
    private static func checkShape(_ group: Group, _ id: UInt16) throws {
        guard let chunk = group.chunkLength else { return }
        if let last = group.lastLength, last > chunk {
            throw YaOKError(.fragmentInvalid, "Last fragment of group \(id) is longer than the others")
        }
        let total = (Int(group.count) - 1) * chunk + (group.lastLength ?? 1)
        guard total <= Wire.maxPacketLength else {
            throw YaOKError(.fragmentInvalid, "Group \(id) would reassemble to \(total) bytes, over the packet limit")
        }
    }

    /// Drops groups with no new fragment for `timeoutMs`. `receive` calls it; call it from
    /// a timer too, so that a silent peer's leftovers are released.
    public mutating func expire(nowMs: Int64) {
        guard nowMs >= nextExpiryMs else { return }
        nextExpiryMs = .max
        for (id, group) in groups where nowMs >= group.lastProgressMs && nowMs - group.lastProgressMs >= timeoutMs {
            drop(id)
        }
        for (id, at) in completed where nowMs >= at && nowMs - at >= timeoutMs {
            completed.removeValue(forKey: id)
        }
        for group in groups.values { noteDeadline(from: group.lastProgressMs) }
        for at in completed.values { noteDeadline(from: at) }
    }

    private mutating func noteDeadline(from startMs: Int64) {
        let (deadline, overflow) = startMs.addingReportingOverflow(timeoutMs)
        nextExpiryMs = min(nextExpiryMs, overflow ? .max : deadline)
    }

    /// Bounded by count (oldest forgotten first) and by `timeoutMs` (in `expire`).
    private mutating func remember(_ id: UInt16, nowMs: Int64) {
        if completed.count >= Self.maxCompletedRemembered,
           let oldest = completed.min(by: { $0.value < $1.value }) {
            completed.removeValue(forKey: oldest.key)
        }
        completed[id] = nowMs
        noteDeadline(from: nowMs)
    }

    private mutating func drop(_ id: UInt16) {
        guard let group = groups.removeValue(forKey: id) else { return }
        memoryInUse -= group.cost
    }

    /// Evicts the least recently progressing groups other than `keep` until `cost` fits.
    /// The new fragment's own group is never the victim: checkShape and the budget check
    /// already guarantee that it fits once the others are gone.
    private mutating func makeRoom(for cost: Int, keeping keep: UInt16) {
        while memoryInUse + cost > budget {
            let victim = groups.filter { $0.key != keep }.min { $0.value.lastProgressMs < $1.value.lastProgressMs }
            guard let victim else { return }
            drop(victim.key)
        }
    }
}
