import Foundation

/// A run as the command line describes it: a plan (generated or imported), a workload, and
/// the routers to run over them.
public struct Scenario: Sendable {
    public enum PlanSource: Sendable, Equatable {
        case community, waypoint, chain
        case one(path: String), haggle(path: String)
    }

    public var plan: PlanSource = .community
    public var nodes = 30
    public var days = 2.0
    public var seed: UInt64 = 1
    public var routers = ["direct"]
    public var compare = false
    public var sprayCopies = 8
    public var bandwidth = Defaults.bandwidth
    public var range = 30.0
    public var messagesPerNodePerDay = 4.0
    public var lifetimeHours = 7.0 * 24
    public var printLog = false
    /// The share of each person's friends drawn from their own community (community plan
    /// only; 0: friends drawn at random from everyone, the default).
    public var localFriends = 0.0

    public init() {}

    /// Every router `--compare` runs, in table order.
    public static let allRouters = ["direct", "courier", "spray", "epidemic", "ours"]

    public static let usage = """
        usage: yaok-sim [--plan community|waypoint|chain|one:FILE|haggle:FILE] [--nodes N] [--days D]
                        [--seed S] [--router direct|direct-all|direct-model|epidemic|courier|spray|ours] [--compare]
                        [--copies L] [--bandwidth BYTES_PER_S] [--range METRES] [--rate MSGS_PER_NODE_PER_DAY]
                        [--lifetime-hours H] [--friends-local P] [--log]
               --router also takes a comma-separated list (printed as a table) and the spray
               variants of docs/SIMULATOR.md "Latency against copies", each as NAME or NAME:L
               (\(SprayVariantRouter.Policy.names.joined(separator: ", ")))
        Runs a delay-tolerant scenario on a virtual clock and prints the ONE simulator's metrics
        and the event-log hash (docs/SIMULATOR.md). --compare runs every router over the same plan
        and workload and prints a table. Defaults: community, 30 nodes, 2 days, seed 1, direct.
        """

    /// Parses the command line (without the program name).
    public static func parse(_ arguments: [String]) throws -> Scenario {
        var s = Scenario()
        var i = 0
        func value(_ flag: String) throws -> String {
            i += 1
            guard i < arguments.count else { throw SimError("\(flag) needs a value") }
            return arguments[i]
        }
        func number<T: LosslessStringConvertible>(_ flag: String, _ type: T.Type) throws -> T {
            let v = try value(flag)
            guard let n = T(v) else { throw SimError("\(flag): \(v) is not a valid number") }
            return n
        }
        while i < arguments.count {
            let flag = arguments[i]
            switch flag {
            case "--plan":
                let v = try value(flag)
                switch v {
                case "community": s.plan = .community
                case "waypoint": s.plan = .waypoint
                case "chain": s.plan = .chain
                default:
                    if v.hasPrefix("one:"), v.count > 4 { s.plan = .one(path: String(v.dropFirst(4))) }
                    else if v.hasPrefix("haggle:"), v.count > 7 { s.plan = .haggle(path: String(v.dropFirst(7))) }
                    else { throw SimError("--plan: \(v) is not community, waypoint, chain, one:FILE or haggle:FILE") }
                }
            case "--nodes":
                s.nodes = try number(flag, Int.self)
                guard (2...10_000).contains(s.nodes) else { throw SimError("--nodes must be 2 to 10000") }
            case "--days":
                s.days = try number(flag, Double.self)
                guard s.days > 0, s.days <= 365 else { throw SimError("--days must be above 0 and at most 365") }
            case "--seed": s.seed = try number(flag, UInt64.self)
            case "--router":
                let names = try value(flag).split(separator: ",").map(String.init)
                for v in names where !(allRouters + ["direct-model", "direct-all"]).contains(v) {
                    guard Scenario.variant(v, copies: 8) != nil else {
                        throw SimError("--router: \(v) is not direct, direct-all, direct-model, epidemic, courier, spray, ours or a spray variant")
                    }
                }
                guard !names.isEmpty else { throw SimError("--router needs a name") }
                s.routers = names
                if names.count > 1 { s.compare = true }
            case "--compare": s.compare = true
            case "--copies":
                s.sprayCopies = try number(flag, Int.self)
                guard (1...1024).contains(s.sprayCopies) else { throw SimError("--copies must be 1 to 1024") }
            case "--bandwidth":
                s.bandwidth = try number(flag, Double.self)
                guard s.bandwidth > 0 else { throw SimError("--bandwidth must be positive") }
            case "--range":
                s.range = try number(flag, Double.self)
                guard s.range > 0 else { throw SimError("--range must be positive") }
            case "--rate":
                s.messagesPerNodePerDay = try number(flag, Double.self)
                guard s.messagesPerNodePerDay > 0, s.messagesPerNodePerDay <= 1000 else { throw SimError("--rate must be above 0 and at most 1000") }
            case "--lifetime-hours":
                s.lifetimeHours = try number(flag, Double.self)
                guard s.lifetimeHours > 0, s.lifetimeHours <= 14 * 24 else { throw SimError("--lifetime-hours must be above 0 and at most 336 (14 days)") }
            case "--friends-local":
                s.localFriends = try number(flag, Double.self)
                guard (0...1).contains(s.localFriends) else { throw SimError("--friends-local must be 0 to 1") }
            case "--log": s.printLog = true
            default:
                throw SimError("Unknown option \(flag)\n\(usage)")
            }
            i += 1
        }
        if s.compare, s.routers.count < 2 { s.routers = allRouters }
        return s
    }

    public func makePlan() throws -> ContactPlan {
        switch plan {
        case .community:
            var m = CommunityModel(nodes: nodes, days: days)
            m.bandwidth = bandwidth
            return try m.plan(seed: seed)
        case .waypoint:
            var m = RandomWaypoint(nodes: nodes, days: days)
            m.bandwidth = bandwidth
            m.range = range
            return try m.plan(seed: seed)
        case .chain:
            var m = ChainPlan(nodes: nodes, days: days)
            m.bandwidth = bandwidth
            return try m.plan(seed: seed)
        case .one(let path):
            return try ONEConnectionImporter.plan(text: Scenario.read(path), bandwidth: bandwidth)
        case .haggle(let path):
            return try HaggleImporter.plan(text: Scenario.read(path), bandwidth: bandwidth)
        }
    }

    public func makeWorkload(_ plan: ContactPlan) -> Workload {
        var options = Workload.Options()
        options.perNodePerDay = messagesPerNodePerDay
        options.lifetime = lifetimeHours * 3600
        if localFriends > 0, self.plan == .community {
            let model = CommunityModel(nodes: nodes, days: days)
            options.localFriends = localFriends
            options.community = { model.community(of: $0) }
        }
        return Workload.generate(plan: plan, seed: seed, options: options)
    }

    public func makeRouter(_ name: String) throws -> Router {
        switch name {
        case "direct": return RealNodeRouter()
        case "direct-all": return RealNodeRouter(name: "direct-all", links: .everyEncounter)
        case "ours": return RealNodeRouter(name: "ours", links: .everyEncounter, carry: .anyone)
        case "direct-model": return PacketRouter(.direct)
        case "epidemic": return PacketRouter(.epidemic)
        case "courier": return PacketRouter(.bitchatCourier)
        case "spray": return PacketRouter(.spray(copies: sprayCopies))
        default:
            guard let variant = Scenario.variant(name, copies: sprayCopies) else { throw SimError("No router called \(name)") }
            return SprayVariantRouter(variant)
        }
    }

    /// A spray variant as `--router` names it: NAME or NAME:L (L copies).
    static func variant(_ text: String, copies: Int) -> SprayVariantRouter.Policy? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 2 else { return nil }
        var l = copies
        if parts.count == 2 {
            guard let n = Int(parts[1]), (1...1024).contains(n) else { return nil }
            l = n
        }
        guard var p = SprayVariantRouter.Policy.named(parts[0], copies: l) else { return nil }
        p.name = parts.count == 2 ? text : "\(parts[0]):\(l)"
        return p
    }

    /// Files up to 256 MiB (a trace larger than that is not a contact plan).
    static func read(_ path: String) throws -> String {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
            throw SimError("Cannot read \(path)")
        }
        guard let size = attributes[.size] as? Int, size <= 256 << 20 else { throw SimError("\(path) is larger than 256 MiB") }
        guard let data = FileManager.default.contents(atPath: path) else { throw SimError("Cannot read \(path)") }
        guard let text = String(data: data, encoding: .utf8) else { throw SimError("\(path) is not UTF-8 text") }
        return text
    }
}
