import YaOKCrypto
import YaOKStore

/// The engine's carrying settings and counters (in memory; the packets are in the store).
struct CarryState {
    var mode: CarryMode = .anyone
    var limits: CarryLimits = .standard
    var counters = CarryCounters()
    /// The meetings on open links, by link ID (CarrySession.swift).
    var sessions: [UInt64: CarrySession] = [:]
    /// Meetings with relays (§12.9), by carrier ID (carrier and link IDs share one counter,
    /// so a carrier's ID names its meeting in `sessions`).
    var relayMeetings: [UInt64: Carrier] = [:]
    /// The carried tags our contacts send us under (§10.3), built from the contact directory
    /// when unlocked; nil while locked and whenever the contacts change.
    var tags: CarriedTagTable<Int64>?
    /// Own carried copies of messages sent, still to be made (OwnCopyQueue.swift).
    var ownCopies = OwnCopyQueue()
    /// When the carry store was last swept (expired packets, claims, quota rows).
    var lastSweep: Int64 = .min
    /// Bytes of carried packets this node hands over per clock hour on all its links
    /// together (PROTOCOL §12.3 step 4), and what it has handed in the current hour.
    /// Strangers are unlinkable, so a per-peer bound could not hold: without this one, a
    /// stranger linking again and again pulled 256 KiB per link for 16 bytes an identity.
    var handOverBytesPerHour = CarryState.defaultHandOverBytesPerHour
    var handedHour: Int64 = .min
    var handedBytes = 0

    static let defaultHandOverBytesPerHour = 64 << 20

    /// The store's bounds for the current limits (quotas and purge memory at their defaults).
    var policy: CarryPolicy {
        var p = CarryPolicy.default
        p.maxPackets = limits.maxPackets
        p.maxBytes = limits.maxBytes
        return p
    }
}

/// What the engine counts since the node was opened (`CarryStatistics` adds the mode, the
/// caps and what the store holds, read when asked, so none of those is kept twice).
struct CarryCounters {
    var packetsTaken = 0
    var packetsHandedOn = 0
    var messagesDeliveredThroughCarriers = 0
    var acksThroughCarriers = 0
    var packetsPurged = 0
    var packetsRefused = 0
    /// Bytes of §11 messages sent (the simulator's reconciliation bytes per encounter).
    var reconciliationBytesSent = 0
}
