import YaOKSupport
import YaOKWire

/// The bounds of a node's carry store (docs/PROTOCOL.md §10.9): how much it keeps for
/// strangers, and how much one depositor may put in per hour. The engine passes it to every
/// `takeCarried`, so a change of setting applies at the next packet offered; a store already
/// over a lowered cap shrinks by eviction as new packets arrive (and by `shrinkCarried`).
package struct CarryPolicy: Sendable, Equatable {
    /// The most packets kept. 2,000 by default: the ordinary carried packet is a text message
    /// in a small padding bucket (162 to ~1,100 bytes), so 2,000 of them are a few MB, and
    /// even as a bare list of 16-byte identities (32 KB) the whole store crosses a Bluetooth
    /// link of a few hundred KB/s in a fraction of a second, so a meeting that must fall back
    /// to listing it still fits in a short encounter. For scale: 100 people sending 20
    /// messages a day, each spread to at most 8 carriers (and an ack as many), put ~320
    /// copies a day on each of 100 nodes; most are purged within a day or two of delivery,
    /// so 2,000 holds several days of that traffic undelivered.
    package var maxPackets: Int
    /// The most bytes kept (packets as encoded). 32 MiB by default: little next to a phone's
    /// storage (a few photos) and to the database of its own messages, yet room for ~1,900
    /// packets of the largest bucket (17,408 bytes), so the byte cap binds only when large
    /// packets crowd the store.
    package var maxBytes: Int
    /// The most packets one depositor (a link, or a source the engine names with one
    /// `CarryDepositor` key) may have taken per clock hour. 500 by default, a quarter of the
    /// store: a stranger met once cannot fill it, yet an honest carrier met after a long
    /// separation can still hand over a large backlog.
    package var depositorPacketsPerHour: Int
    /// The most bytes one depositor may have taken per clock hour: 8 MiB, a quarter of the store.
    package var depositorBytesPerHour: Int
    /// The most purge claims remembered (16-byte claim, 16-byte hash, expiry: ~60 bytes a
    /// row with its index). Claims for packets this node held are evicted last (§10.9).
    package var maxPurgeRecords: Int

    package init(maxPackets: Int = 2_000, maxBytes: Int = 32 << 20, depositorPacketsPerHour: Int = 500,
                 depositorBytesPerHour: Int = 8 << 20, maxPurgeRecords: Int = 20_000) {
        self.maxPackets = maxPackets
        self.maxBytes = maxBytes
        self.depositorPacketsPerHour = depositorPacketsPerHour
        self.depositorBytesPerHour = depositorBytesPerHour
        self.maxPurgeRecords = maxPurgeRecords
    }

    package static let `default` = CarryPolicy()

    /// `invalidArgument` for a bound under 1, or a byte cap too small for the largest packet
    /// (a store that could never take one would refuse every large message silently).
    package func validate() throws {
        guard maxPackets >= 1, depositorPacketsPerHour >= 1, maxPurgeRecords >= 1 else {
            throw YaOKError(.invalidArgument, "Carry limits must allow at least one packet and one purge claim")
        }
        guard maxBytes >= Wire.maxPacketLength, depositorBytesPerHour >= Wire.maxPacketLength else {
            throw YaOKError(.invalidArgument, "Carry byte limits must hold at least one packet of \(Wire.maxPacketLength) bytes")
        }
    }
}
