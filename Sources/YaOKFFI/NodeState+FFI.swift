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
    sizedValue({ try YaOKFFI.node(node) }, out, minimum: nodeStateMinimumSize, "yaok_node_state") { n in yaok_node_state(try n.overview()) }
}

extension yaok_node_state {
    /// The node at a glance in the header's struct (`struct_size` is set when written).
    init(_ o: NodeOverview) {
        self.init()
        initialized = o.status.initialized ? 1 : 0
        locked = o.status.locked ? 1 : 0
        lockout_seconds = UInt32(clamping: o.status.lockoutSecondsRemaining)
        failed_attempts = UInt32(clamping: o.status.failedAttempts)
        transports = UInt32(clamping: o.transports.count)
        transports_running = UInt32(clamping: o.transports.filter { $0.phase == .running }.count)
        transports_failed = UInt32(clamping: o.transports.filter { $0.phase == .failed }.count)
        links_open = UInt32(clamping: o.openLinks)
        held_packets = UInt32(clamping: o.heldPackets)
        counts_known = o.unlocked ? 1 : 0
        contacts = UInt32(clamping: o.contacts)
        contacts_online = UInt32(clamping: o.contactsOnline)
        messages_waiting = UInt32(clamping: o.messagesWaiting)
    }
}
