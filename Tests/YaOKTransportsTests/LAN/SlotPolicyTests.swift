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

    @Test func strangersBeyondTheCapAreTheNewest() {
        let occupants = (1...5).map { Self.occupant(UInt64($0), address: Int($0), authenticated: true, contact: $0 == 2 ? true : false) }
        #expect(SlotPolicy.strangersBeyond(2, among: occupants) == [4, 5])
        #expect(SlotPolicy.strangersBeyond(4, among: occupants).isEmpty)
    }
}
