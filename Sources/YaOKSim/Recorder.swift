/// What routers report during a run, kept as the event log and the counts the metrics are
/// made of. Routers call it from the simulation loop only (one thread).
public struct Recorder: Sendable {
    public private(set) var log: EventLog
    let workload: Workload
    /// Simulated seconds of each message's first delivery.
    private(set) var deliveredAt: [Int: Double] = [:]
    /// Deliveries of a message its recipient already had: must stay 0 for a real node
    /// (exactly once), counted for the models too.
    public private(set) var duplicateDeliveries = 0
    /// Packet hand-overs (the ONE's "relayed"), the final hop to the recipient included.
    private(set) var relayed = 0
    private(set) var bytes = 0
    private(set) var reconciliationBytes = 0
    private(set) var encounters = 0
    private(set) var peakStore = 0

    init(workload: Workload, keepLines: Bool) {
        self.workload = workload
        log = EventLog(keepLines: keepLines)
    }

    mutating func created(_ m: SimMessage) {
        log.append(m.created, "create m\(m.id) \(m.from)>\(m.to) \(m.size)B")
    }

    mutating func contact(_ e: Encounter, up: Bool, at time: Double) {
        if up { encounters += 1 }
        log.append(time, "\(up ? "up" : "down") \(e.a)-\(e.b)")
    }

    /// `message` crossed from `from` to `to`, `bytes` long.
    public mutating func relayed(_ message: SimMessage, from: Int, to: Int, at time: Double, bytes: Int) {
        relayed += 1
        self.bytes += bytes
        log.append(time, "relay m\(message.id) \(from)>\(to)")
    }

    /// `message` reached its recipient (the caller also reports the hop with `relayed`).
    public mutating func delivered(_ message: SimMessage, at time: Double) {
        if deliveredAt[message.id] != nil {
            duplicateDeliveries += 1
            log.append(time, "duplicate m\(message.id)")
            return
        }
        deliveredAt[message.id] = time
        log.append(time, "deliver m\(message.id)")
    }

    /// Bytes a real link carried (handshake, packets, receipts, acknowledgements): counted
    /// in bytes per delivered message, not logged (their exact count is the engine's timing).
    public mutating func linkBytes(_ count: Int) { bytes += count }

    /// Bytes a meeting spent learning what the other side has (summaries, reconciliation).
    /// Counted, not logged: real nodes' reconciliation messages depend on their random
    /// packet identities, and the hash must not. `inLinkBytes`: already counted in
    /// `linkBytes` (a real link's bytes include them).
    public mutating func reconciliation(bytes: Int, inLinkBytes: Bool) {
        reconciliationBytes += bytes
        if !inLinkBytes { self.bytes += bytes }
    }

    /// Copies a carrying engine handed between nodes that the simulation cannot attribute to
    /// one message (sealed packets: the carriers cannot tell either), acks included.
    public mutating func carried(handOvers: Int, at time: Double) {
        relayed += handOvers
        log.append(time, "carried \(handOvers)")
    }

    /// A node holds `packets` packets (its own and carried) now.
    public mutating func store(_ node: Int, packets: Int) {
        peakStore = max(peakStore, packets)
    }

    /// Something a router wants in the log and the hash (a drop, an eviction).
    public mutating func note(_ time: Double, _ text: String) { log.append(time, text) }

    func metrics(router: String) -> Metrics {
        let latencies = workload.messages.compactMap { m -> Double? in
            guard let t = deliveredAt[m.id], t - m.created <= workload.lifetime else { return nil }
            return t - m.created
        }.sorted()
        let created = workload.messages.count
        let delivered = latencies.count
        func percentile(_ p: Double) -> Double? {
            guard !latencies.isEmpty else { return nil }
            return latencies[min(latencies.count - 1, Int((p * Double(latencies.count - 1)).rounded()))]
        }
        return Metrics(router: router, created: created, delivered: delivered,
                       deliveryProbability: created == 0 ? 0 : Double(delivered) / Double(created),
                       latencyMedian: percentile(0.5), latencyP90: percentile(0.9),
                       relayed: relayed,
                       overheadRatio: delivered == 0 ? nil : Double(relayed - delivered) / Double(delivered),
                       copiesPerMessage: created == 0 ? 0 : Double(relayed) / Double(created),
                       bytesPerDeliveredMessage: delivered == 0 ? nil : Double(bytes) / Double(delivered),
                       peakStoreOccupancy: peakStore,
                       reconciliationBytesPerEncounter: encounters == 0 ? 0 : Double(reconciliationBytes) / Double(encounters),
                       encounters: encounters, duplicateDeliveries: duplicateDeliveries,
                       events: log.count, hash: log.hash)
    }
}
