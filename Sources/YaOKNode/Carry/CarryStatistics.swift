import YaOKSupport

/// What a node carries and has carried, for diagnostics, `yaok status` and the app's
/// settings screen. Held figures come from the store (they survive restarts); the counters
/// count since the node was opened.
public struct CarryStatistics: Sendable, Equatable {
    public var mode: CarryMode
    public var limits: CarryLimits
    /// Carried packets in the store now (others' and this node's own), and their bytes.
    public var packetsHeld: Int
    public var bytesHeld: Int
    /// Packets taken from peers.
    public var packetsTaken: Int
    /// Copies handed to peers (each hand-over counts once).
    public var packetsHandedOn: Int
    /// Messages this node received through carriers (opened from carried packets, new).
    public var messagesDeliveredThroughCarriers: Int
    /// Own messages whose acknowledgement came back through carriers.
    public var acksThroughCarriers: Int
    /// Packets deleted because a purge claim showed them delivered.
    public var packetsPurged: Int
    /// Packets asked for, handed over and then refused (over quota, store full, expired).
    public var packetsRefused: Int

    public init(mode: CarryMode, limits: CarryLimits, packetsHeld: Int = 0, bytesHeld: Int = 0,
                packetsTaken: Int = 0, packetsHandedOn: Int = 0, messagesDeliveredThroughCarriers: Int = 0,
                acksThroughCarriers: Int = 0, packetsPurged: Int = 0, packetsRefused: Int = 0) {
        self.mode = mode
        self.limits = limits
        self.packetsHeld = packetsHeld
        self.bytesHeld = bytesHeld
        self.packetsTaken = packetsTaken
        self.packetsHandedOn = packetsHandedOn
        self.messagesDeliveredThroughCarriers = messagesDeliveredThroughCarriers
        self.acksThroughCarriers = acksThroughCarriers
        self.packetsPurged = packetsPurged
        self.packetsRefused = packetsRefused
    }

    /// As in diagnostics ("carry") and the C and Python bindings.
    public var json: JSON {
        .object([("mode", .string(mode.name)),
                 ("max_packets", .int(Int64(limits.maxPackets))), ("max_bytes", .int(Int64(limits.maxBytes))),
                 ("packets_held", .int(Int64(packetsHeld))), ("bytes_held", .int(Int64(bytesHeld))),
                 ("packets_taken", .int(Int64(packetsTaken))), ("packets_handed_on", .int(Int64(packetsHandedOn))),
                 ("messages_delivered_through_carriers", .int(Int64(messagesDeliveredThroughCarriers))),
                 ("acks_through_carriers", .int(Int64(acksThroughCarriers))),
                 ("packets_purged", .int(Int64(packetsPurged))), ("packets_refused", .int(Int64(packetsRefused)))])
    }
}
