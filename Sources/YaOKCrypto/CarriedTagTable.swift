import YaOKSupport
import YaOKWire

/// How a node recognises its own carried packets without any per-packet key exchange
/// (docs/PROTOCOL.md §10.3): a precomputed table of the tags its contacts send it under,
/// for every epoch a live packet can have — contacts × epochs entries, one hash each,
/// looked up in O(1) per packet. A packet's epoch is the UTC day of its expiry, which is
/// outside, so the lookup also checks that the entry's epoch is the packet's.
///
/// A live packet expires between now and now + 14 days + 1 hour + 15 minutes
/// (`CarriedPacket.maxExpiryAheadMs`), so its epoch is one of `epochCount` = 16 days from
/// today's. `advance(nowMs:)` drops past days and adds new ones: O(contacts) a day.
/// Building needs the pair keys (unlocked); the table itself holds only tags.
public struct CarriedTagTable<Contact: Hashable & Sendable>: Sendable {
    /// Today and the 15 days after it: every UTC day on which a live packet can expire.
    public static var epochCount: Int {
        Int(CarriedPacket.maxExpiryAheadMs / RoutingTag.dayMs) + 2
    }

    struct Entry: Sendable {
        let contact: Contact
        let epoch: UInt32
    }

    private var routes: [Contact: RoutePair]
    private var entries: [RoutingTag: Entry] = [:]
    public private(set) var firstEpoch: UInt32

    /// The tags of every contact in `routes` (each our `RoutePair` with them) for the
    /// epochs live at `nowMs`.
    public init(routes: [Contact: RoutePair], nowMs: Int64) {
        self.routes = routes
        self.firstEpoch = RoutingTag.day(ofMs: nowMs)
        for epoch in epochs { add(epoch: epoch) }
    }

    /// The number of tags held: contacts × `epochCount`.
    public var count: Int { entries.count }

    var epochs: ClosedRange<UInt32> { firstEpoch...(firstEpoch + UInt32(Self.epochCount - 1)) }

    /// Moves the window to the day of `nowMs`: each day passed removes one epoch's tags and
    /// adds one (a jump of more than the window rebuilds it; a clock set back moves it back).
    public mutating func advance(nowMs: Int64) {
        let today = RoutingTag.day(ofMs: nowMs)
        guard today != firstEpoch else { return }
        let old = epochs
        firstEpoch = today
        let new = epochs
        entries = entries.filter { new.contains($0.value.epoch) }
        for epoch in new where !old.contains(epoch) { add(epoch: epoch) }
    }

    /// A new contact's tags (or a replaced route's).
    public mutating func insert(_ contact: Contact, route: RoutePair) {
        remove(contact)
        routes[contact] = route
        for epoch in epochs { entries[route.carriedIncomingTag(epoch: epoch)] = Entry(contact: contact, epoch: epoch) }
    }

    public mutating func remove(_ contact: Contact) {
        guard routes.removeValue(forKey: contact) != nil else { return }
        entries = entries.filter { $0.value.contact != contact }
    }

    /// The contact that sent this packet to us, or nil: someone else's packet (a stranger's
    /// looks the same), or one whose tag is for another epoch than its expiry's.
    public func sender(of packet: CarriedPacket) -> Contact? {
        guard let entry = entries[packet.routingTag], entry.epoch == packet.epoch else { return nil }
        return entry.contact
    }

    /// The contact whose tag this is for some live epoch, or nil: what a node checks on an
    /// offer (docs/PROTOCOL.md §12.3), which shows the tag but not the expiry. The epoch is
    /// checked when the packet itself arrives (`sender(of:)`).
    public func sender(tag: RoutingTag) -> Contact? {
        entries[tag]?.contact
    }

    private mutating func add(epoch: UInt32) {
        for (contact, route) in routes {
            entries[route.carriedIncomingTag(epoch: epoch)] = Entry(contact: contact, epoch: epoch)
        }
    }
}
