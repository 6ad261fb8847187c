import CYaOK
import YaOK

/* ---- carrying for others ---- */

/// YAOK_CARRY_* in include/yaok.h: the C numbering of `CarryMode`. Never renumbered.
private let carryModes: [UInt32: CarryMode] = [YAOK_CARRY_ANYONE: .anyone, YAOK_CARRY_CONTACTS: .contactsOnly, YAOK_CARRY_OFF: .off]

private func carryModeNumber(_ mode: CarryMode) -> UInt32 {
    carryModes.first { $0.value == mode }?.key ?? 0
}

@c @implementation
public func yaok_node_set_carry(_ node: OpaquePointer?, _ mode: UInt32, _ maxPackets: UInt32, _ maxBytes: UInt64) -> Int32 {
    withNode(node) { n in try n.setCarry(mode: try carryMode(mode), limits: try carryLimits(maxPackets, maxBytes)) }
}

/// YAOK_CARRY_* as a mode.
private func carryMode(_ mode: UInt32) throws -> CarryMode {
    guard let mode = carryModes[mode] else {
        throw YaOKError(.invalidArgument, "Unknown carry mode \(mode): YAOK_CARRY_ANYONE (0), YAOK_CARRY_CONTACTS (1) or YAOK_CARRY_OFF (2)")
    }
    return mode
}

/// yaok_node_set_carry's limits: 0 keeps the standard one.
private func carryLimits(_ maxPackets: UInt32, _ maxBytes: UInt64) throws -> CarryLimits {
    var limits = CarryLimits.standard
    if maxPackets != 0 { limits.maxPackets = Int(maxPackets) }
    if maxBytes != 0 {
        guard maxBytes <= UInt64(CarryLimits.maxBytesLimit) else {
            throw YaOKError(.invalidArgument, "The carry store holds at most \(CarryLimits.maxBytesLimit) bytes (64 GiB), not \(maxBytes)")
        }
        limits.maxBytes = Int(maxBytes)
    }
    return limits
}

/// The fields of this version's `yaok_carry_status` up to `max_packets`: a caller's
/// `struct_size` must cover at least these. Fields are written only when they end within
/// `struct_size`, so a caller built against an older, shorter struct is never overrun.
private let carryStatusMinimumSize = MemoryLayout<UInt32>.size * 3

@c @implementation
public func yaok_node_carry_status(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<yaok_carry_status>?) -> Int32 {
    sizedValue({ try YaOKFFI.node(node) }, out, minimum: carryStatusMinimumSize, "yaok_carry_status") { n in
        yaok_carry_status(try n.carryStatistics())
    }
}

extension yaok_carry_status {
    /// The carry store's figures in the header's struct (`struct_size` is set when written).
    init(_ s: CarryStatistics) {
        self.init()
        mode = carryModeNumber(s.mode)
        max_packets = UInt32(clamping: s.limits.maxPackets)
        reserved = 0
        max_bytes = UInt64(clamping: s.limits.maxBytes)
        packets_held = UInt64(clamping: s.packetsHeld)
        bytes_held = UInt64(clamping: s.bytesHeld)
        packets_taken = UInt64(clamping: s.packetsTaken)
        packets_handed_on = UInt64(clamping: s.packetsHandedOn)
        messages_delivered_through_carriers = UInt64(clamping: s.messagesDeliveredThroughCarriers)
        acks_through_carriers = UInt64(clamping: s.acksThroughCarriers)
        packets_purged = UInt64(clamping: s.packetsPurged)
        packets_refused = UInt64(clamping: s.packetsRefused)
    }
}
