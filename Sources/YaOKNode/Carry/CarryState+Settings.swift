import YaOKSupport
import YaOKStore

/// The carry setting survives a restart (the settings table, readable while locked, as the
/// auto-lock is): a user who turned carrying off must not find it on again after their
/// phone restarts. The counters do not persist (`CarryStatistics`: since the node opened).
extension CarryState {
    static let modeSetting = "carry_mode"
    static let maxPacketsSetting = "carry_max_packets"
    static let maxBytesSetting = "carry_max_bytes"

    /// The stored setting, or the defaults (anyone, standard caps) for what is missing or
    /// out of range.
    static func load(_ store: Store) throws -> CarryState {
        var state = CarryState()
        switch try store.setting(modeSetting) {
        case 1?: state.mode = .contactsOnly
        case 2?: state.mode = .off
        default: state.mode = .anyone
        }
        var limits = CarryLimits.standard
        if let n = try store.setting(maxPacketsSetting), let v = Int(exactly: n) { limits.maxPackets = v }
        if let n = try store.setting(maxBytesSetting), let v = Int(exactly: n) { limits.maxBytes = v }
        var policy = CarryPolicy.default
        policy.maxPackets = limits.maxPackets
        policy.maxBytes = limits.maxBytes
        if (try? policy.validate()) != nil { state.limits = limits }
        return state
    }

    func save(_ store: Store) throws {
        let code: Int64 = switch mode {
        case .anyone: 0
        case .contactsOnly: 1
        case .off: 2
        }
        try store.setSetting(Self.modeSetting, code)
        try store.setSetting(Self.maxPacketsSetting, Int64(limits.maxPackets))
        try store.setSetting(Self.maxBytesSetting, Int64(limits.maxBytes))
    }
}
