/// A run's results, named as the ONE simulator's MessageStatsReport names them where it has
/// the figure (delivery_prob, latency_med, overhead_ratio, relayed), so results compare with
/// published ONE studies.
public struct Metrics: Sendable, Equatable {
    public let router: String
    public let created: Int
    /// Delivered within the lifetime.
    public let delivered: Int
    /// delivered / created (the ONE's delivery_prob).
    public let deliveryProbability: Double
    /// Seconds from creation to first delivery, over delivered messages (latency_med).
    public let latencyMedian: Double?
    public let latencyP90: Double?
    /// Packet hand-overs, the last hop included (relayed).
    public let relayed: Int
    /// (relayed − delivered) / delivered (overhead_ratio).
    public let overheadRatio: Double?
    /// relayed / created: how many times, on average, a message was copied onto another node.
    public let copiesPerMessage: Double
    /// Every byte sent (packets and reconciliation) / delivered messages.
    public let bytesPerDeliveredMessage: Double?
    /// The most packets one node held at once (its own waiting ones and those it carried).
    public let peakStoreOccupancy: Int
    /// Bytes spent per encounter learning what the other side holds (0 for routers that
    /// reconcile nothing).
    public let reconciliationBytesPerEncounter: Double
    public let encounters: Int
    public let duplicateDeliveries: Int
    public let events: Int
    /// SHA-256 of the event log.
    public let hash: String
}

extension Metrics {
    /// The comparison table: one row per run.
    public static func table(_ rows: [Metrics]) -> String {
        let header = ["router", "delivery_prob", "latency_med", "latency_p90", "overhead_ratio", "copies/msg",
                      "bytes/delivered", "peak_store", "recon_B/enc", "delivered", "hash"]
        let body = rows.map { m in
            [m.router, fixed(m.deliveryProbability, 3), duration(m.latencyMedian), duration(m.latencyP90),
             m.overheadRatio.map { fixed($0, 2) } ?? "-", fixed(m.copiesPerMessage, 2),
             m.bytesPerDeliveredMessage.map { fixed($0, 0) } ?? "-", "\(m.peakStoreOccupancy)",
             fixed(m.reconciliationBytesPerEncounter, 1), "\(m.delivered)/\(m.created)", String(m.hash.prefix(16))]
        }
        let widths = header.indices.map { i in ([header] + body).map { $0[i].count }.max() ?? 0 }
        func row(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in
                i == 0 ? c.padding(widths[i]) : String(repeating: " ", count: widths[i] - c.count) + c
            }.joined(separator: "  ")
        }
        return ([row(header)] + body.map(row)).joined(separator: "\n")
    }

    /// One run in full, one figure a line.
    public var report: String {
        """
        router                              \(router)
        created                             \(created)
        delivered (within lifetime)         \(delivered)
        delivery_prob                       \(Metrics.fixed(deliveryProbability, 4))
        latency_med                         \(Metrics.duration(latencyMedian))
        latency_p90                         \(Metrics.duration(latencyP90))
        relayed                             \(relayed)
        overhead_ratio                      \(overheadRatio.map { Metrics.fixed($0, 3) } ?? "-")
        copies per message                  \(Metrics.fixed(copiesPerMessage, 3))
        bytes per delivered message         \(bytesPerDeliveredMessage.map { Metrics.fixed($0, 1) } ?? "-")
        peak store occupancy (packets)      \(peakStoreOccupancy)
        reconciliation bytes per encounter  \(Metrics.fixed(reconciliationBytesPerEncounter, 1))
        encounters                          \(encounters)
        duplicate deliveries                \(duplicateDeliveries)
        events                              \(events)
        event-log hash                      \(hash)
        """
    }

    public static func fixed(_ x: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let r = (x * scale).rounded() / scale
        var s = "\(r)"
        if digits == 0 { return "\(Int64(r))" }
        let parts = s.split(separator: ".", maxSplits: 1)
        let frac = parts.count > 1 ? String(parts[1]) : ""
        if frac.contains("e") { return s }
        s = String(parts[0]) + "." + (frac + String(repeating: "0", count: digits)).prefix(digits)
        return s
    }

    /// Seconds as a short human duration ("3.2h", "41m", "12s").
    static func duration(_ seconds: Double?) -> String {
        guard let s = seconds else { return "-" }
        if s >= 3600 { return fixed(s / 3600, 1) + "h" }
        if s >= 60 { return fixed(s / 60, 1) + "m" }
        return fixed(s, 1) + "s"
    }
}

extension String {
    func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}
