import YaOKSupport
import YaOKWire
import YaOKStore

/// A relay that answers ACCEPTED and stores nothing (docs/PROTOCOL.md §8.3, "Sent is not
/// delivered"): the message would stay `sent` for ever, posted again to the same relay every
/// hour, with no sign to the person. So the node remembers which relay took each message
/// and, when the hour for its acknowledgement passes with the message still in the outbox,
/// counts the miss against that relay (diagnostics), tells the app once an hour per relay
/// (a `TRANSPORT_NOTICE`), seals it again (Node+Reseal.swift: the same bytes could not bring
/// a lost acknowledgement back) and posts it through another relay if one is connected (a
/// direct link to the recipient already takes it first, §6.1).
///
/// Relays are told apart by their route (where the user configured them, `Carrier.route`),
/// never by the identifier they state: any relay can read another's from its CHALLENGE and
/// state it too, and a liar doing so must neither escape the re-post nor blame the honest one.
struct CarrierAckWatch {
    /// Messages a relay stored, by packet ID: the route that took it and the ack deadline.
    /// Only this run's (a restart forgets them; the re-post still happens).
    var waiting: [MessageID: (route: String, deadline: Int64)] = [:]
    /// The routes whose window a message missed, oldest first: the next post avoids them if
    /// it can.
    var missedAt: [MessageID: [String]] = [:]
    /// Per route: windows missed, the last one's time, the last notice's time.
    var misses: [String: (count: Int64, lastMs: Int64, noticeMs: Int64?)] = [:]

    /// Bounds (a node with a huge outbox forgets the oldest, not its memory).
    static let maxTracked = 65_536
    /// Routes remembered per message, and in the misses table (the oldest miss goes first).
    static let maxRoutesPerMessage = 8
    static let maxRoutes = 256
    static let noticeIntervalMs: Int64 = 3_600_000

    mutating func carried(_ id: MessageID, route: String, deadline: Int64) {
        if waiting.count >= Self.maxTracked { waiting.removeAll(keepingCapacity: true) }
        waiting[id] = (route, deadline)
    }

    /// `id`'s window at `route` passed without an ack: the next post avoids that route.
    mutating func missed(_ id: MessageID, at route: String) {
        if missedAt[id] == nil, missedAt.count >= Self.maxTracked { missedAt.removeAll() }
        var routes = missedAt[id] ?? []
        routes.removeAll { $0 == route }
        routes.append(route)
        if routes.count > Self.maxRoutesPerMessage { routes.removeFirst(routes.count - Self.maxRoutesPerMessage) }
        missedAt[id] = routes
    }

    /// Counts `count` missed windows at `route` by `t`; true when the app should be told
    /// (at most once an hour per route). Keeps at most `maxRoutes` routes: a new one pushes
    /// out the one whose last miss is oldest.
    mutating func countMisses(_ count: Int, at route: String, now t: Int64) -> Bool {
        if misses[route] == nil, misses.count >= Self.maxRoutes,
           let oldest = misses.min(by: { $0.value.lastMs < $1.value.lastMs })?.key {
            misses[oldest] = nil
        }
        var m = misses[route] ?? (0, t, nil)
        m.count += Int64(count)
        m.lastMs = t
        let notice = m.noticeMs.map { t - $0 >= Self.noticeIntervalMs } ?? true
        if notice { m.noticeMs = t }
        misses[route] = m
        return notice
    }

    /// The carrier a message goes through: the first whose route has not missed its window,
    /// else one other than the route that missed last; nil when there is none (the caller
    /// takes the first).
    static func pick(_ open: [Carrier], avoiding missed: [String]) -> Carrier? {
        open.first { !missed.contains($0.route) } ?? open.first { $0.route != missed.last }
    }
}

extension DeliveryEngine {
    /// Windows that passed by `t`: each message still in the outbox is a miss of the route
    /// that took it. Runs in the sweep before the overdue carried messages are queued again.
    mutating func checkCarriedAcks(_ store: Store, _ keys: UnlockedKeys?, now t: Int64) throws {
        let due = ackWatch.waiting.filter { $0.value.deadline <= t }
        guard !due.isEmpty else { return }
        var missed: [String: Int] = [:]
        for (id, entry) in due {
            ackWatch.waiting[id] = nil
            // Gone: acked (or damaged, and taken out: DeliveryEngine+DamagedOutbox).
            guard let row = try checkedOutboxRow(id, store, keys), row.kind == .message else { continue }
            missed[entry.route, default: 0] += 1
            ackWatch.missed(id, at: entry.route)
            try reseal(row, store, keys)
        }
        for (route, count) in missed.sorted(by: { $0.key < $1.key }) {
            guard ackWatch.countMisses(count, at: route, now: t) else { continue }
            let n = count == 1 ? "1 message" : "\(count) messages"
            effects.events.append(.transportNotice(TransportNotice(
                transport: "relay",
                message: "No delivery confirmation for \(n) an hour after the relay at \(route) stored them: the relay may be losing messages. Sending again, through another route if there is one.")))
        }
    }
}

extension Node {
    /// For a relay's diagnostics: windows missed at the relay configured at `route`
    /// ("host:port"), and when the last one was. nil: none in this run.
    public func missedAcknowledgements(route: String) -> (count: Int64, lastMs: Int64)? {
        state.withLock { s in s.delivery.ackWatch.misses[route].map { ($0.count, $0.lastMs) } }
    }
}
