import YaOKSupport
import YaOKWire

/// Where a carried packet sits in the order reconciliation pages through (docs/PROTOCOL.md
/// §10.9): by expiry, then by identity (bytes compared as unsigned, first byte first).
/// Sorting by expiry first puts the packets about to go at one end, so the ranges two
/// carriers compare change least as packets expire.
package struct CarryKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    package let expiresAtMs: Int64
    /// The packet identity (§10.2), 16 bytes.
    package let id: [UInt8]

    package init(expiresAtMs: Int64, id: [UInt8]) {
        self.expiresAtMs = expiresAtMs
        self.id = id
    }

    package static func < (a: CarryKey, b: CarryKey) -> Bool {
        a.expiresAtMs != b.expiresAtMs ? a.expiresAtMs < b.expiresAtMs : a.id.lexicographicallyPrecedes(b.id)
    }

    package var description: String { "\(expiresAtMs)/\(Hex.encode(id))" }
}

/// One packet in the carry store, without its bytes (`Store.carriedPacket` loads those).
package struct CarriedEntry: Equatable, Sendable {
    package let id: [UInt8]
    package let expiresAtMs: Int64
    package let copyBudget: UInt8
    package let hopLimit: UInt8
    /// The encoded packet's length in bytes (what counts against the byte cap).
    package let size: Int
    package let takenAtMs: Int64
    package let depositor: CarryDepositor
    package let claimHash: [UInt8]

    package var key: CarryKey { CarryKey(expiresAtMs: expiresAtMs, id: id) }
}

/// What `Store.takeCarried` did with a packet offered. The refusals are ordinary answers,
/// not errors: the engine tells the depositor and goes on. (Bytes that are not a carried
/// packet, expired or over-long ones are thrown, by `CarriedPacket.decode`.)
package enum CarryTake: Equatable, Sendable {
    /// Stored and committed (unless the caller holds a transaction open: then once the
    /// caller commits). `evicted` are the identities that went to make room.
    case taken(CarriedEntry, evicted: [[UInt8]])
    /// Already held: nothing changed, and the quota is not charged.
    case duplicate
    /// Its claim has been published (§10.6): a late copy of a delivered packet.
    case purged
    /// The depositor used its quota for this clock hour.
    case overQuota
    /// No room: everything held ranks above it for keeping (§10.9's eviction order).
    case full

    /// A readable reason, for logs and diagnostics.
    package var message: String {
        switch self {
        case .taken: return "Taken"
        case .duplicate: return "Already carried"
        case .purged: return "Refused: this packet was delivered and purged"
        case .overQuota: return "Refused: this link's hourly carry quota is used up"
        case .full: return "Refused: the carry store is full of packets it keeps first"
        }
    }
}
