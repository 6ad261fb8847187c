import CYaOK
import YaOK

/* ---- typed access: the node at a glance (own card, state) ---- */

@c @implementation
public func yaok_node_card(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in CardHandle(try n.profile()) }
}

/// `yaok_node_state` up to `failed_attempts`: the lock state, all a caller may ask for.
private let nodeStateMinimumSize = MemoryLayout<UInt32>.size * 5

@c @implementation
public func yaok_node_get_state(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<yaok_node_state>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out")
        let size = out.pointee.struct_size
        guard Int(size) >= nodeStateMinimumSize else {
            throw YaOKError(.invalidArgument, "yaok_node_state.struct_size must be set to sizeof(yaok_node_state), got \(size)")
        }
        let o = try n.overview()
        var s = yaok_node_state()
        s.struct_size = size
        s.initialized = o.status.initialized ? 1 : 0
        s.locked = o.status.locked ? 1 : 0
        s.lockout_seconds = UInt32(clamping: o.status.lockoutSecondsRemaining)
        s.failed_attempts = UInt32(clamping: o.status.failedAttempts)
        s.transports = UInt32(clamping: o.transports.count)
        s.transports_running = UInt32(clamping: o.transports.filter { $0.phase == .running }.count)
        s.transports_failed = UInt32(clamping: o.transports.filter { $0.phase == .failed }.count)
        s.links_open = UInt32(clamping: o.openLinks)
        s.held_packets = UInt32(clamping: o.heldPackets)
        s.counts_known = o.unlocked ? 1 : 0
        s.contacts = UInt32(clamping: o.contacts)
        s.contacts_online = UInt32(clamping: o.contactsOnline)
        s.messages_waiting = UInt32(clamping: o.messagesWaiting)
        try writeSized(s, to: out, structSize: size, minimum: nodeStateMinimumSize, "yaok_node_state")
    }
}
