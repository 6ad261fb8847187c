/// Binary spray-and-wait for carried packets (docs/PROTOCOL.md §10.5): the copy budget
/// says how many copies the holder may still make, itself included. Pure Swift (fuzz build).
public enum CopyBudget {
    /// What an originator gives a new packet, and the cap every carrier clamps to: at most
    /// this many copies of one packet ever exist (the network is no amplifier).
    public static let maximum: UInt8 = 8

    /// A hand-over to another carrier: the giver keeps ⌈b/2⌉, the taker gets ⌊b/2⌋, so the
    /// copies of a packet never exceed the originator's budget. nil when the budget is 1
    /// (the "wait" phase: this copy goes to its recipient only, never to another carrier).
    /// A budget above the cap counts as the cap (a carrier cannot buy copies).
    public static func split(_ budget: UInt8) -> (kept: UInt8, given: UInt8)? {
        let b = min(budget, maximum)
        guard b >= 2 else { return nil }
        return (b - b / 2, b / 2)
    }
}
