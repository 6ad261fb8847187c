import Testing
@testable import YaOKTransports

/// The slot policy the LAN and Bluetooth transports share (PROTOCOL.md §7, §9.2), alone.
@Suite struct SlotPolicyTests {
    typealias O = SlotPolicy.Occupant<Int>

    static func occupant(_ id: UInt64, address: Int = 1, inbound: Bool = true, open: Bool = true,
                         authenticated: Bool = false, contact: Bool? = nil) -> O {
        O(id: id, address: address, inbound: inbound, open: open, authenticated: authenticated, contact: contact)
    }

    let policy = SlotPolicy(maxConnections: 4, maxPerAddress: 2, reservedOutboundSlots: 1)

    @Test func theOldestUnfinishedInboundGoesFirstThenTheOldestStranger() {
        let occupants = [
            Self.occupant(1, address: 1, authenticated: true, contact: false),
            Self.occupant(2, address: 2),
            Self.occupant(3, address: 3),
        ]
        // Inbound: 3 of 3 inbound slots taken (one is kept for our connects).
        #expect(policy.makeRoom(among: occupants, for: 9, inbound: true)?.map(\.id) == [2])
        #expect(policy.makeRoom(among: occupants, for: 9, inbound: true)?.first?.why == .unfinished)
        // Outbound: the reserved slot is free, nothing goes.
        #expect(policy.makeRoom(among: occupants, for: 9, inbound: false)?.isEmpty == true)
        let finished = [
            Self.occupant(1, address: 1, authenticated: true, contact: true),
            Self.occupant(2, address: 2, authenticated: true, contact: false),
            Self.occupant(3, address: 3, authenticated: true, contact: false),
        ]
        #expect(policy.makeRoom(among: finished, for: 9, inbound: true)?.map(\.id) == [2])
        #expect(policy.makeRoom(among: finished, for: 9, inbound: true)?.first?.why == .stranger)
    }

    @Test func contactsUnplacedPeersAndOurOwnConnectsAreNeverEvicted() {
        let occupants = [
            Self.occupant(1, address: 1, authenticated: true, contact: true),
            Self.occupant(2, address: 2, authenticated: true, contact: nil),  // a node that cannot tell
            Self.occupant(3, address: 3, inbound: false, open: false),       // our connect in progress
            Self.occupant(4, address: 4, inbound: false),                    // ours, handshake running
        ]
        #expect(policy.makeRoom(among: occupants, for: 9, inbound: true) == nil)
        #expect(policy.makeRoom(among: occupants, for: 9, inbound: false) == nil)
    }

    @Test func oneAddressMakesRoomFromItsOwnConnections() {
        let occupants = [
            Self.occupant(1, address: 5),
            Self.occupant(2, address: 7),
            Self.occupant(3, address: 7, authenticated: true, contact: false),
        ]
        // Address 7 holds its 2: one of its own goes (the unfinished one before its stranger),
        // never address 5's, though the older.
        #expect(policy.makeRoom(among: occupants, for: 7, inbound: true)?.map(\.id) == [2])
        let contacts = [Self.occupant(1, address: 7, authenticated: true, contact: true),
                        Self.occupant(2, address: 7, authenticated: true, contact: true)]
        #expect(policy.makeRoom(among: contacts, for: 7, inbound: false) == nil)
        #expect(policy.makeRoom(among: contacts, for: 8, inbound: true)?.isEmpty == true)
    }

    @Test func onlyTheInboundLimitInTheWayEvictsOneInboundConnection() {
        // 4 of 4 taken, 3 of 3 inbound: one inbound victim makes room under both limits;
        // evicting the outbound stranger (the oldest) first frees no inbound slot, and a
        // second connection would be closed for nothing.
        let occupants = [
            Self.occupant(1, address: 1, inbound: false, authenticated: true, contact: false),
            Self.occupant(2, address: 2, authenticated: true, contact: false),
            Self.occupant(3, address: 3, authenticated: true, contact: false),
            Self.occupant(4, address: 4, authenticated: true, contact: false),
        ]
        #expect(policy.makeRoom(among: occupants, for: 9, inbound: true)?.map(\.id) == [2])
        // With the total under its limit and only the inbound one full, the outbound stranger
        // stays too.
        let three = Array(occupants.dropLast())
        let wider = SlotPolicy(maxConnections: 5, maxPerAddress: 2, reservedOutboundSlots: 3)
        #expect(wider.makeRoom(among: three, for: 9, inbound: true)?.map(\.id) == [2])
        // An outbound newcomer needs a slot of any kind: the oldest stranger, outbound, goes.
        #expect(policy.makeRoom(among: occupants, for: 9, inbound: false)?.map(\.id) == [1])
    }

    @Test func strangersBeyondTheCapAreTheNewest() {
        let occupants = (1...5).map { Self.occupant(UInt64($0), address: Int($0), authenticated: true, contact: $0 == 2 ? true : false) }
        #expect(SlotPolicy.strangersBeyond(2, among: occupants) == [4, 5])
        #expect(SlotPolicy.strangersBeyond(4, among: occupants).isEmpty)
    }
}
