import YaOKSupport
import YaOKWire
import YaOKStore

/// A relay that answers ACCEPTED and stores nothing (docs/PROTOCOL.md §8.3, "Sent is not
/// delivered"): the message would stay `sent` for ever, posted again to the same relay every
/// hour, with no sign to the person. So the node remembers which relay took each message
/// and, when the hour for its acknowledgement passes with the message still in the outbox,
/// counts the miss against that relay (diagnostics), tells the app once an hour per relay
/// (a `TRANSPORT_NOTICE`), and posts it again through another relay if one is connected
/// (a direct link to the recipient already takes it first, §6.1).
struct CarrierAckWatch {
    /// Messages a relay stored, by packet ID: the relay's identifier and the ack deadline.
    /// Only this run's (a restart forgets them; the re-post still happens).
    var waiting: [MessageID: (relay: [UInt8], deadline: Int64)] = [:]
    /// The relay whose window a message missed last: the next post avoids it if it can.
    var missedAt: [MessageID: [UInt8]] = [:]
    /// Per relay identifier: windows missed, the last one's time, the last notice's time.
    var misses: [[UInt8]: (count: Int64, lastMs: Int64, noticeMs: Int64?)] = [:]

    /// Bounds (a node with a huge outbox forgets the oldest, not its memory).
    static let maxTracked = 65_536
    static let noticeIntervalMs: Int64 = 3_600_000

    mutating func carried(_ id: MessageID, relay: [UInt8], deadline: Int64) {
        if waiting.count >= Self.maxTracked { waiting.removeAll(keepingCapacity: true) }
        waiting[id] = (relay, deadline)
    }
}

extension Node {
    /// Windows that passed by `t`: each message still in the outbox is a miss of the relay
    /// that took it. Runs in the sweep before the overdue carried messages are queued again.
    func checkCarriedAcks(_ store: Store, _ s: inout NodeState, _ effects: inout Effects, now t: Int64) throws {
        let due = s.delivery.ackWatch.waiting.filter { $0.value.deadline <= t }
        guard !due.isEmpty else { return }
        var missed: [[UInt8]: Int] = [:]
        for (id, entry) in due {
            s.delivery.ackWatch.waiting[id] = nil
            guard let row = try store.outboxRow(id), row.kind == .message else { continue }  // acked: gone
            missed[entry.relay, default: 0] += 1
            if s.delivery.ackWatch.missedAt.count >= CarrierAckWatch.maxTracked { s.delivery.ackWatch.missedAt.removeAll() }
            s.delivery.ackWatch.missedAt[id] = entry.relay
        }
        for (relay, count) in missed {
            var m = s.delivery.ackWatch.misses[relay] ?? (0, t, nil)
            m.count += Int64(count)
            m.lastMs = t
            if m.noticeMs.map({ t - $0 >= CarrierAckWatch.noticeIntervalMs }) ?? true {
                m.noticeMs = t
                let n = count == 1 ? "1 message" : "\(count) messages"
                effects.events.append(.transportNotice(TransportNotice(
                    transport: "relay",
                    message: "No delivery confirmation for \(n) an hour after the relay stored them: the relay may be losing messages. Sending again, through another route if there is one.")))
            }
            s.delivery.ackWatch.misses[relay] = m
        }
    }

    /// For a relay's diagnostics: windows missed at the relay `relay` (identifier), and when
    /// the last one was. nil: none in this run.
    public func missedAcknowledgements(relay: [UInt8]) -> (count: Int64, lastMs: Int64)? {
        state.withLock { s in s.delivery.ackWatch.misses[relay].map { ($0.count, $0.lastMs) } }
    }
}
