/// How messages move when people meet: the one thing that differs between the runs a
/// comparison makes. The simulation calls a router from one thread, in simulated-time order:
/// `start`, then `created` and `contactUp`/`contactDown` as the workload and the plan say,
/// then `finish`. A router reports what it moved to `run.recorder`; an encounter's
/// `transfer` says whether bytes still fit in it. Carrying through the real engine plugs
/// in as one more router: `RealNodeRouter` drives real nodes, and linked at every
/// encounter (`.everyEncounter`) the carrying engine is "ours".
public protocol Router: AnyObject {
    var name: String { get }
    func start(_ run: RunContext) throws
    /// `message` was written now (`message.created`); `active` are the encounters up now.
    func created(_ message: SimMessage, active: [ActiveEncounter], run: RunContext) throws
    func contactUp(_ encounter: ActiveEncounter, run: RunContext) throws
    func contactDown(_ encounter: ActiveEncounter, run: RunContext) throws
    func finish(_ run: RunContext) throws
}

/// What a run shares with its router: the inputs, the virtual clock and the recorder.
public final class RunContext {
    public let plan: ContactPlan
    public let workload: Workload
    public let clock: VirtualClock
    public internal(set) var recorder: Recorder
    /// Simulated seconds now.
    public internal(set) var now: Double = 0

    init(plan: ContactPlan, workload: Workload, keepLines: Bool) {
        self.plan = plan
        self.workload = workload
        clock = VirtualClock()
        recorder = Recorder(workload: workload, keepLines: keepLines)
    }
}

/// An encounter while it is up, with what it has carried so far in each direction. Time is
/// the budget: a transfer from `a` to `b` of n bytes starts when the previous one ended (or
/// now, if later) and takes n / bandwidth seconds; it fits if it ends by the encounter's end.
public final class ActiveEncounter {
    public let encounter: Encounter
    /// When the link from a to b (and b to a) is next free.
    private var freeAt: (ab: Double, ba: Double)

    init(_ encounter: Encounter) {
        self.encounter = encounter
        freeAt = (encounter.start, encounter.start)
    }

    public var a: Int { encounter.a }
    public var b: Int { encounter.b }
    public func other(than node: Int) -> Int { node == a ? b : a }

    /// Bytes `from` can still send after `now` before the encounter ends.
    public func remaining(from: Int, now: Double) -> Int {
        let start = max(now, from == a ? freeAt.ab : freeAt.ba)
        return max(0, Int(((encounter.end - start) * encounter.bandwidth).rounded(.down)))
    }

    /// Sends `bytes` from `from` at `now`: the simulated time it arrives, or nil if the
    /// encounter ends first (nothing is sent then).
    public func transfer(_ bytes: Int, from: Int, now: Double) -> Double? {
        let start = max(now, from == a ? freeAt.ab : freeAt.ba)
        let end = start + Double(bytes) / encounter.bandwidth
        guard end <= encounter.end else { return nil }
        if from == a { freeAt.ab = end } else { freeAt.ba = end }
        return end
    }
}
