import YaOKStore

/// The engine's carrying settings and counters (in memory; the packets are in the store).
struct CarryState {
    var mode: CarryMode = .anyone
    var limits: CarryLimits = .standard
    var counters = CarryStatistics(mode: .anyone, limits: .standard)

    /// The store's bounds for the current limits (quotas and purge memory at their defaults).
    var policy: CarryPolicy {
        var p = CarryPolicy.default
        p.maxPackets = limits.maxPackets
        p.maxBytes = limits.maxBytes
        return p
    }
}
