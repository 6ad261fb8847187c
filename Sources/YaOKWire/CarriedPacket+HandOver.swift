/// One hand-over of a carried packet between carriers (docs/PROTOCOL.md §10.5), the rules in
/// one place: the budget halved (`CopyBudget.split`), the hop limit of the copy given
/// decremented (`HopLimit.forwarded`, §4.4). Only bytes 2 and 3 change, so the packet's
/// identity and seal are untouched. Pure Swift (fuzz build).
extension CarriedPacket {
    /// What the giver keeps and the copy it gives, or nil when this copy may go to no other
    /// carrier: budget 1 (the wait phase: to its recipient only) or hop limit 0.
    public func handOver<R: RandomNumberGenerator>(using rng: inout R) -> (kept: CarriedPacket, given: CarriedPacket)? {
        guard let (keep, give) = CopyBudget.split(copyBudget),
              let hop = HopLimit.forwarded(hopLimit, using: &rng) else { return nil }
        var kept = self
        kept.copyBudget = keep
        kept.hopLimit = min(hopLimit, HopLimit.maximum)
        var given = self
        given.copyBudget = give
        given.hopLimit = hop
        return (kept, given)
    }
}
