import Foundation
import YaOKSupport
import YaOKLoop
import YaOKStore
import YaOKNode

/// Real nodes: one `Node` per person (its own database in a temporary directory, the real
/// engine, the virtual clock as its clock), contacts added for every friendship of the
/// workload, messages written with `Node.send`. When an encounter links two people (`links`),
/// a `LockstepPipe` joins them through the link API, as an app's radio would, and moves their
/// units in rounds until the encounter's bytes are used up or nothing moves (for direct
/// delivery: or everything between them is delivered and acknowledged). Deliveries are
/// counted from the recipients' events (`messageReceived`), in any encounter, and checked
/// against their history at the end: each message exactly once.
///
/// A delivery is logged at the time the link opened (the models log the exact second a
/// transfer ends): the lock-step pipe makes the outcome deterministic, not the real time
/// it took. Carrying plugs in here: the engine that carries, linked at every encounter.
public final class RealNodeRouter: Router {
    /// Which encounters open a link.
    public enum Links: Sendable {
        /// Two contacts with mail for each other (today's direct delivery: strangers'
        /// encounters can carry nothing, and linking them would only cost time).
        case contactsWithMail
        /// Every encounter, strangers too: what carrying runs on. With today's engine it must
        /// deliver exactly what `contactsWithMail` does.
        case everyEncounter
    }

    public let name: String
    public let links: Links
    /// Whether the nodes carry for each other (docs/PROTOCOL.md §12): `off` is today's
    /// direct delivery; `anyone` linked at every encounter is "ours".
    public let carry: CarryMode
    /// Fragment size of the simulated radio (Bluetooth LE's ATT payload is around 500).
    public var mtu = 512

    private struct Observed {
        /// How many times each message ID was received (a second time is a duplicate).
        var received: [String: Int] = [:]
        var acknowledged: Set<String> = []
        var events = 0
    }
    /// Written by the nodes' event threads, read by the simulation.
    private final class Observations: Sendable {
        let state = Locked(Observed())
        func withLock<R>(_ body: (inout Observed) -> R) -> R { state.withLock { body(&$0) } }
    }
    private let observed = Observations()
    private var nodes: [Int: Node] = [:]
    private var directory = ""
    /// contactIDs[a][b]: b's contact id in a's node.
    private var contactIDs: [[Int: Int64]] = []
    /// Messages written and not yet known delivered and acknowledged, per pair.
    private var outstanding: [NodePair: Set<Int>] = [:]
    /// The message ID (hex) the sender's node gave each workload message.
    private var hexOf: [Int: String] = [:]
    /// Receipts already logged, per message ID.
    private var counted: [String: Int] = [:]
    private var stalls = 0
    /// With carrying: each message's carried copy (its packet identity), and the nodes other
    /// than its sender seen holding it after a meeting (its copies, for `copies/msg`).
    private var messageOfPacket: [[UInt8]: Int] = [:]
    private var holders: [Int: Set<Int>] = [:]

    public init(name: String = "direct", links: Links = .contactsWithMail, carry: CarryMode = .off) {
        self.name = name
        self.links = links
        self.carry = carry
    }

    public func start(_ run: RunContext) throws {
        // Memory-backed when Linux offers it: the nodes' databases need no durability here,
        // and each transaction's fsync would otherwise dominate a run's time.
        let base = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        directory = base + "yaok-sim-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var options = Node.Options()
        options.pinHashing = .insecureFastForTestsOnly
        options.allowTestOnlyKDFCosts = true
        options.clock = run.clock.function
        // Timers on the real clock would fire wherever a node's thread happens to be (more
        // often on a loaded machine) and the same seed would give another run: the nodes'
        // timers run when an encounter starts instead (`meet`), on the virtual clock.
        options.callerRunsTimers = true
        let involved = links == .everyEncounter ? Set(run.plan.encounters.flatMap { [$0.a, $0.b] })
                                                : Set(run.workload.friendships.flatMap { [$0.a, $0.b] })
        contactIDs = Array(repeating: [:], count: run.plan.nodeCount)
        // Only people who may link get a node (a sparse trace's unused ids cost nothing).
        for i in involved.sorted() {
            let node = try Node(dataDirectory: directory + "/node-\(i)", options: options)
            _ = try node.setup(name: "Node \(i)", pin: "246810", confirmation: "246810")
            _ = try node.setAutoLock(.never)
            try node.setCarry(mode: carry)
            node.setEventHandler { [observed] event in
                observed.withLock { o in
                    switch event {
                    case .messageReceived(_, let id):
                        o.received[id.description, default: 0] += 1
                        o.events += 1
                    case .messageStatusChanged(let m) where m.status == .delivered:
                        o.acknowledged.insert(m.messageIDHex)
                        o.events += 1
                    default:
                        break
                    }
                }
            }
            nodes[i] = node
        }
        for pair in run.workload.friendships {
            let ab = try node(pair.a).addContact(card: node(pair.b).profile().text)
            let ba = try node(pair.b).addContact(card: node(pair.a).profile().text)
            contactIDs[pair.a][pair.b] = ab.id
            contactIDs[pair.b][pair.a] = ba.id
        }
    }

    public func created(_ message: SimMessage, active: [ActiveEncounter], run: RunContext) throws {
        guard let contact = contactIDs[message.from][message.to] else {
            throw SimError("Message \(message.id): \(message.to) is not a contact of \(message.from)")
        }
        let sent = try node(message.from).send(to: contact, text: RealNodeRouter.text(of: message))
        hexOf[message.id] = sent.messageIDHex
        // The node makes the carried copy on its timer within a second of sending (§12.6),
        // well inside one step of the simulated clock: made now, as that timer would.
        if carry != .off { try node(message.from).makeOwnCarriedCopies() }
        if carry != .off, let packet = try node(message.from).ownCarriedPacketID(sent.messageID) {
            messageOfPacket[packet] = message.id
        }
        outstanding[NodePair(message.from, message.to), default: []].insert(message.id)
        run.recorder.store(message.from, packets: waiting(at: message.from, run: run))
        // Written while linked: goes now, as on a real link.
        for e in active where links == .everyEncounter || e.other(than: message.from) == message.to { try meet(e, run: run) }
    }

    public func contactUp(_ encounter: ActiveEncounter, run: RunContext) throws { try meet(encounter, run: run) }
    public func contactDown(_ encounter: ActiveEncounter, run: RunContext) throws {}

    public func finish(_ run: RunContext) throws {
        defer {
            for node in nodes.values { node.close() }
            nodes = [:]
            try? FileManager.default.removeItem(atPath: directory)
        }
        // Exactly once: each message in its recipient's history at most once. A copy the
        // events did not show counts as a duplicate delivery too (the run then fails).
        var histories: [Int: [String: Int]] = [:]   // recipient × nodes + sender → text counts
        for m in run.workload.messages where m.created < run.plan.duration {
            guard let contact = contactIDs[m.to][m.from], let hex = hexOf[m.id] else { continue }
            let key = m.to * run.plan.nodeCount + m.from
            if histories[key] == nil {
                histories[key] = try history(of: m.to, contact).reduce(into: [:]) { $0[$1, default: 0] += 1 }
            }
            let copies = histories[key]?[RealNodeRouter.text(of: m)] ?? 0
            if copies > 1 { run.recorder.note(run.now, "history holds m\(m.id) \(copies) times") }
            for _ in max(counted[hex, default: 0], 1)..<max(copies, 1) { run.recorder.delivered(m, at: run.now) }
        }
        if stalls > 0 { run.recorder.note(run.now, "stalled encounters \(stalls)") }
        if carry != .off {
            // Copies of messages (not acks): every node but the sender that held one.
            run.recorder.carried(handOvers: holders.values.reduce(0) { $0 + $1.count }, at: run.now)
        }
    }

    /// Every text of a conversation, page by page.
    private func history(of node: Int, _ contact: Int64) throws -> [String] {
        var texts: [String] = []
        var cursor: String?
        repeat {
            let page = try self.node(node).history(contact, before: cursor, limit: 1000)
            texts += page.messages.map(\.text)
            cursor = page.olderCursor
        } while cursor != nil
        return texts
    }

    /// A text of the message's size that names it (the recipient's history is checked by it).
    static func text(of m: SimMessage) -> String {
        let head = "m\(m.id) "
        return head + String(repeating: "x", count: max(0, m.size - head.utf8.count))
    }

    /// Messages `node` wrote that are not yet known delivered: its outbox, roughly.
    private func waiting(at node: Int, run: RunContext) -> Int {
        outstanding.filter { $0.key.a == node || $0.key.b == node }.values.reduce(0) { sum, ids in
            sum + ids.filter { run.workload.messages[$0].from == node }.count
        }
    }

    private func meet(_ e: ActiveEncounter, run: RunContext) throws {
        let pair = NodePair(e.a, e.b)
        if links == .contactsWithMail {
            guard contactIDs[e.a][e.b] != nil, let waiting = outstanding[pair], !waiting.isEmpty else { return }
        }
        // What is left of the encounter (a message written during it links the pair again).
        let capacity = min(e.remaining(from: e.a, now: run.now), e.remaining(from: e.b, now: run.now))
        guard capacity > 0 else { return }
        // What came due since the last encounter (retries, expiry, carried packets' sweep),
        // as each node's timer would have run it by now.
        for i in [e.a, e.b] { try node(i).runDeliveryTimers() }
        let reconciled = { [self] in carry == .off ? 0 : [e.a, e.b].reduce(0) { $0 + ((try? node($1).carryReconciliationBytesSent()) ?? 0) } }
        let reconciledBefore = reconciled()
        let pipe = try LockstepPipe(node(e.a), node(e.b), capacity: capacity, mtu: mtu)
        let progress = { [observed] in observed.withLock { $0.events } }
        pipe.run(until: { links == .contactsWithMail && done(pair, run: run) }, progress: progress)
        pipe.close(progress: progress)
        run.recorder.reconciliation(bytes: reconciled() - reconciledBefore, inLinkBytes: true)
        _ = e.transfer(pipe.bytesEachWay.0, from: e.a, now: run.now)
        _ = e.transfer(pipe.bytesEachWay.1, from: e.b, now: run.now)
        if links == .contactsWithMail && !done(pair, run: run) && !pipe.exhausted { stalls += 1 }
        collect(around: e, at: max(run.now, e.encounter.start), bytes: pipe.bytes, run: run)
        if carry != .off {
            for i in [e.a, e.b] {
                let held = try node(i).carriedPacketIDs()
                run.recorder.store(i, packets: held.count)
                for packet in held {
                    if let m = messageOfPacket[packet], run.workload.messages[m].from != i { holders[m, default: []].insert(i) }
                }
            }
        }
    }

    /// Whether every outstanding message of the pair has been received and acknowledged.
    private func done(_ pair: NodePair, run: RunContext) -> Bool {
        let ids = outstanding[pair] ?? []
        return observed.withLock { o in
            ids.allSatisfy { id in
                guard let hex = hexOf[id] else { return false }
                return o.received[hex] != nil && o.acknowledged.contains(hex)
            }
        }
    }

    /// Records what the encounter delivered (to either side, from anyone), in workload order,
    /// and forgets what is delivered and acknowledged.
    private func collect(around e: ActiveEncounter, at time: Double, bytes: Int, run: RunContext) {
        let o = observed.withLock { $0 }
        let pairs = outstanding.keys.filter { [$0.a, $0.b].contains(e.a) || [$0.a, $0.b].contains(e.b) }
        for pair in pairs.sorted(by: { ($0.a, $0.b) < ($1.a, $1.b) }) {
            var left = Set<Int>()
            for id in (outstanding[pair] ?? []).sorted() {
                let m = run.workload.messages[id]
                guard let hex = hexOf[id] else { continue }
                let count = o.received[hex] ?? 0
                // Each receipt not logged yet is a delivery; a second one is a duplicate.
                for _ in counted[hex, default: 0]..<max(count, counted[hex, default: 0]) {
                    run.recorder.relayed(m, from: e.other(than: m.to), to: m.to, at: time, bytes: 0)
                    run.recorder.delivered(m, at: time)
                }
                counted[hex] = max(count, counted[hex, default: 0])
                if !(count > 0 && o.acknowledged.contains(hex)) { left.insert(id) }
            }
            outstanding[pair] = left.isEmpty ? nil : left
        }
        run.recorder.linkBytes(bytes)
        run.recorder.note(time, "link \(e.a)-\(e.b)")
    }

    private func node(_ i: Int) throws -> Node {
        guard let node = nodes[i] else { throw SimError("Node \(i) has no friends and so no real node") }
        return node
    }
}
