/// Which connection gives up its slot when a transport is full, and which links with
/// strangers are too many: the one policy of the LAN and Bluetooth transports
/// (PROTOCOL.md §7, §9.2). Pure: the transports hand in what they know of each connection
/// and close what it names, under their own lock.
///
/// Anyone can open connections, and anyone can complete a link's handshake with an identity
/// made for the purpose; this version forwards nothing for others (§4.3), so a stranger's
/// link is worth little to us and a contact's is what the slots are for.
struct SlotPolicy {
    /// What the policy needs to know of one connection (open, or an outbound one opening).
    struct Occupant<Address: Hashable> {
        let id: UInt64
        let address: Address
        let inbound: Bool
        /// False while an outbound connect is in progress.
        let open: Bool
        /// The link's handshake has completed, as the transport last asked it.
        let authenticated: Bool
        /// Whether that peer is a contact: nil while unknown (a node not unlocked since it
        /// started cannot tell), never evicted or closed for it.
        let contact: Bool?
    }

    /// Of these connections' links, those whose handshake has completed, with whether the
    /// peer is a contact: what `Occupant.authenticated` and `contact` are refreshed from.
    /// Asked outside the transport's lock (a link reads the node's state under its own).
    static func authenticated(_ candidates: [(UInt64, any TransportLink)]) -> [(UInt64, any TransportLink, Bool?)] {
        candidates.compactMap { id, link in link.isAuthenticated ? (id, link, link.peerIsContact) : nil }
    }

    /// Why a connection is evicted.
    enum Eviction: Equatable {
        /// An inbound connection whose handshake had not finished.
        case unfinished
        /// Its authenticated peer is not a contact.
        case stranger
    }

    /// Connections in all.
    let maxConnections: Int
    /// Connections with one remote address, both directions together.
    let maxPerAddress: Int
    /// Slots of `maxConnections` inbound connections never take (our own connects keep room).
    let reservedOutboundSlots: Int

    /// The connections to close so that a new one with `address` fits, or nil when no room
    /// can be made (the new one is then refused, and nothing is evicted). `occupants` oldest
    /// first. The rules, each met by evicting where it is not met already:
    /// - at most `maxPerAddress` with `address`;
    /// - at most `maxConnections` in all, and inbound ones at most `maxConnections -
    ///   reservedOutboundSlots`.
    ///
    /// The victim is first the oldest inbound connection whose handshake has not finished (it
    /// had the longest to finish), then the oldest whose authenticated peer is a stranger,
    /// either direction (only inbound ones for an inbound newcomer while the inbound limit is
    /// reached: an outbound victim would free no inbound slot). Contacts, peers the node
    /// cannot place, and unfinished outbound connections (to a peer we chose) are never evicted.
    func makeRoom<Address>(among occupants: [Occupant<Address>], for address: Address,
                           inbound: Bool) -> [(id: UInt64, why: Eviction)]? {
        var victims: [(id: UInt64, why: Eviction)] = []
        func taken(_ o: Occupant<Address>) -> Bool { victims.contains { $0.id == o.id } }
        func count(_ include: (Occupant<Address>) -> Bool) -> Int {
            occupants.filter { !taken($0) && include($0) }.count
        }
        func victim(_ include: (Occupant<Address>) -> Bool) -> (id: UInt64, why: Eviction)? {
            if let o = occupants.first(where: { o in !taken(o) && o.inbound && o.open && !o.authenticated && include(o) }) {
                return (o.id, .unfinished)
            }
            if let o = occupants.first(where: { o in !taken(o) && o.open && o.authenticated && o.contact == false && include(o) }) {
                return (o.id, .stranger)
            }
            return nil
        }
        let sameAddress = { (o: Occupant<Address>) in o.address == address }
        while count(sameAddress) >= maxPerAddress {
            guard let v = victim(sameAddress) else { return nil }
            victims.append(v)
        }
        let inboundLimit = maxConnections - reservedOutboundSlots
        while true {
            let totalFull = count({ _ in true }) >= maxConnections
            let inboundFull = inbound && count({ $0.inbound }) >= inboundLimit
            guard totalFull || inboundFull else { break }
            // The inbound limit in the way: only an inbound victim frees room under it (and
            // under the total too); an outbound one would be closed for nothing.
            guard let v = victim(inboundFull ? { $0.inbound } : { _ in true }) else { return nil }
            victims.append(v)
        }
        return victims
    }

    /// The connections with strangers beyond the first `max` (oldest first in `occupants`):
    /// the newest go, the older ones being nearer the end of their grace period.
    static func strangersBeyond<Address>(_ max: Int, among occupants: [Occupant<Address>]) -> [UInt64] {
        occupants.filter { $0.authenticated && $0.contact == false }.dropFirst(max).map(\.id)
    }
}
