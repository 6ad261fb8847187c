import YaOKWire
import YaOKStore

/// Packets handed to a link or carrier and not yet confirmed by a receipt, with the bytes
/// each link has outstanding. The pump keeps those bytes under `Node.linkWindowBytes`: the
/// receipts pace the sender, so a backlog never overruns the receiver's queue or the
/// transport's write queue (either would end the link, and every packet on it would wait
/// for a retry).
struct InFlight {
    struct Flight {
        let link: UInt64
        /// Wall-clock time after which the attempt counts as failed.
        let deadline: Int64
        let bytes: Int
        /// The packet's kind as the row said when it was loaded to send (checked against its
        /// MAC then); nil when not known, and the receipt reads the whole row.
        let kind: OutboxRow.Kind?
    }

    private var byID: [MessageID: Flight] = [:]
    private var bytesByLink: [UInt64: Int] = [:]

    var count: Int { byID.count }

    subscript(id: MessageID) -> Flight? { byID[id] }

    mutating func add(_ id: MessageID, link: UInt64, deadline: Int64, bytes: Int, kind: OutboxRow.Kind? = nil) {
        remove(id)
        byID[id] = Flight(link: link, deadline: deadline, bytes: bytes, kind: kind)
        bytesByLink[link, default: 0] += bytes
    }

    @discardableResult
    mutating func remove(_ id: MessageID) -> Flight? {
        guard let flight = byID.removeValue(forKey: id) else { return nil }
        let left = (bytesByLink[flight.link] ?? 0) - flight.bytes
        bytesByLink[flight.link] = left > 0 ? left : nil
        return flight
    }

    /// Bytes sent on `link` and not confirmed yet.
    func bytes(on link: UInt64) -> Int { bytesByLink[link] ?? 0 }

    func ids(on link: UInt64) -> [MessageID] { byID.filter { $0.value.link == link }.map(\.key) }

    func overdue(at t: Int64) -> [MessageID] { byID.filter { $0.value.deadline <= t }.map(\.key) }

    var earliestDeadline: Int64? { byID.values.map(\.deadline).min() }
}
