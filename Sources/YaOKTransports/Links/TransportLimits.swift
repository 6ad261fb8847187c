import YaOKSupport

/// The option checks every connection transport shares (LAN, BLE): its slot limits and
/// its intervals, worded with the transport's name.
enum TransportLimits {
    /// At least one connection and one per address, reserved outbound slots 0 or more and
    /// fewer than `maxConnections` (else no inbound connection could ever be accepted),
    /// strangers 0 or more, a peer table of one at least, a write queue that holds `unit`.
    static func checkSlots(_ transport: String, maxConnections: Int, maxPerAddress: Int, reservedOutboundSlots: Int,
                           maxStrangers: Int, maxDiscoveredPeers: Int, maxWriteQueueBytes: Int, unit: Int) throws {
        guard maxConnections >= 1, maxPerAddress >= 1, maxDiscoveredPeers >= 1, maxWriteQueueBytes >= unit else {
            throw YaOKError(.invalidArgument, "\(transport) limits must be positive (connections per address at least 1, "
                            + "the write queue at least one unit, \(unit) bytes)")
        }
        guard reservedOutboundSlots >= 0, reservedOutboundSlots < maxConnections, maxStrangers >= 0 else {
            throw YaOKError(.invalidArgument, "\(transport) reserved outbound slots must be 0 or more and fewer than "
                            + "maxConnections (\(maxConnections)); the stranger cap must not be negative")
        }
    }

    /// Every interval and timeout in (0, 86400] seconds.
    static func checkIntervals(_ transport: String, _ intervals: [Double]) throws {
        guard intervals.allSatisfy({ $0 > 0 && $0 <= 86_400 }) else {
            throw YaOKError(.invalidArgument, "\(transport) intervals and timeouts must be in (0, 86400] seconds")
        }
    }
}
