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
    withNode(node) { n in
        guard let mode = carryModes[mode] else {
            throw YaOKError(.invalidArgument, "Unknown carry mode \(mode): YAOK_CARRY_ANYONE (0), YAOK_CARRY_CONTACTS (1) or YAOK_CARRY_OFF (2)")
        }
        var limits = CarryLimits.standard
        if maxPackets != 0 { limits.maxPackets = Int(maxPackets) }
        if maxBytes != 0 {
            guard maxBytes <= UInt64(CarryLimits.maxBytesLimit) else {
                throw YaOKError(.invalidArgument, "The carry store holds at most \(CarryLimits.maxBytesLimit) bytes (64 GiB), not \(maxBytes)")
            }
            limits.maxBytes = Int(maxBytes)
        }
        try n.setCarry(mode: mode, limits: limits)
    }
}

/// The fields of this version's `yaok_carry_status` up to `max_packets`: a caller's
/// `struct_size` must cover at least these. Fields are written only when they end within
/// `struct_size`, so a caller built against an older, shorter struct is never overrun.
private let carryStatusMinimumSize = MemoryLayout<UInt32>.size * 3

@c @implementation
public func yaok_node_carry_status(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<yaok_carry_status>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out")
        let size = Int(out.pointee.struct_size)
        guard size >= carryStatusMinimumSize else {
            throw YaOKError(.invalidArgument, "yaok_carry_status.struct_size must be set to sizeof(yaok_carry_status), got \(size)")
        }
        let s = try n.carryStatistics()
        var full = yaok_carry_status()
        full.struct_size = UInt32(size)
        full.mode = carryModeNumber(s.mode)
        full.max_packets = UInt32(clamping: s.limits.maxPackets)
        full.reserved = 0
        full.max_bytes = UInt64(clamping: s.limits.maxBytes)
        full.packets_held = UInt64(clamping: s.packetsHeld)
        full.bytes_held = UInt64(clamping: s.bytesHeld)
        full.packets_taken = UInt64(clamping: s.packetsTaken)
        full.packets_handed_on = UInt64(clamping: s.packetsHandedOn)
        full.messages_delivered_through_carriers = UInt64(clamping: s.messagesDeliveredThroughCarriers)
        full.acks_through_carriers = UInt64(clamping: s.acksThroughCarriers)
        full.packets_purged = UInt64(clamping: s.packetsPurged)
        full.packets_refused = UInt64(clamping: s.packetsRefused)
        // Only the bytes the caller said it has: an older caller's struct is shorter.
        try writeSized(full, to: out, structSize: UInt32(size), minimum: carryStatusMinimumSize, "yaok_carry_status")
    }
}
