/// Runs one router over a plan and a workload: merges message creations, contact ups and
/// downs into one time-ordered stream (at equal times: downs, then ups, then creations, each
/// in plan or workload order) and hands them to the router on the virtual clock.
public struct Simulation {
    public let plan: ContactPlan
    public let workload: Workload
    /// Keep the event log's lines (for a test or `--log`), not only its hash.
    public var keepLog = false

    public init(plan: ContactPlan, workload: Workload) {
        self.plan = plan
        self.workload = workload
    }

    public struct Result {
        public let metrics: Metrics
        public let log: [String]
    }

    private enum Step {
        case down(Int), up(Int), create(Int)
        var rank: Int {
            switch self {
            case .down: return 0
            case .up: return 1
            case .create: return 2
            }
        }
        var index: Int {
            switch self {
            case .down(let i), .up(let i), .create(let i): return i
            }
        }
    }

    public func run(_ router: Router) throws -> Result {
        let run = RunContext(plan: plan, workload: workload, keepLines: keepLog)
        var steps: [(time: Double, step: Step)] = []
        steps.reserveCapacity(plan.encounters.count * 2 + workload.messages.count)
        for (i, e) in plan.encounters.enumerated() {
            steps.append((e.start, .up(i)))
            steps.append((e.end, .down(i)))
        }
        for (i, m) in workload.messages.enumerated() where m.created < plan.duration {
            steps.append((m.created, .create(i)))
        }
        steps.sort { ($0.time, $0.step.rank, $0.step.index) < ($1.time, $1.step.rank, $1.step.index) }

        try router.start(run)
        var active: [Int: ActiveEncounter] = [:]
        for (time, step) in steps {
            run.now = time
            run.clock.set(seconds: time)
            switch step {
            case .up(let i):
                let e = ActiveEncounter(plan.encounters[i])
                active[i] = e
                run.recorder.contact(e.encounter, up: true, at: time)
                try router.contactUp(e, run: run)
            case .down(let i):
                guard let e = active.removeValue(forKey: i) else { continue }
                run.recorder.contact(e.encounter, up: false, at: time)
                try router.contactDown(e, run: run)
            case .create(let i):
                let m = workload.messages[i]
                run.recorder.created(m)
                let mine = active.sorted { $0.key < $1.key }.map(\.value).filter { $0.a == m.from || $0.b == m.from }
                try router.created(m, active: mine, run: run)
            }
        }
        run.now = plan.duration
        run.clock.set(seconds: plan.duration)
        try router.finish(run)
        return Result(metrics: run.recorder.metrics(router: router.name), log: run.recorder.log.lines)
    }
}
