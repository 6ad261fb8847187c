import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKNode

/// Two configured relays, at different addresses, that state one identifier have the same
/// mailboxes for this node (PROTOCOL.md §8.4): relays that coordinate could match them, so
/// the node says so (issue 17 review). Also the bounds of the tables that track relays.
@Suite struct SharedRelayIdentifierTests {
    func isSharedNotice(_ e: NodeEvent) -> Bool { sharedNotice(e) != nil }
    func sharedNotice(_ e: NodeEvent) -> String? {
        if case .transportNotice(let n) = e, n.message.contains("state the same relay identifier") { return n.message }
        return nil
    }

    @Test func twoAddressesStatingOneIdentifierAreNoticed() throws {
        let pair = try Pair()
        defer { pair.close() }
        let events = EventRecorder()
        events.attach(to: pair.alice)
        let first = MemoryRelay(identifier: [UInt8](repeating: 0x11, count: 16), address: "a.example:4433")
        let other = MemoryRelay(identifier: [UInt8](repeating: 0x22, count: 16), address: "b.example:4433")
        let copy = MemoryRelay(identifier: [UInt8](repeating: 0x11, count: 16), address: "c.example:4433")
        try first.connect(pair.alice)
        try other.connect(pair.alice)       // another identifier: nothing to say
        #expect(pair.alice.routesSharingRelayIdentifier(route: first.address).isEmpty)
        try copy.connect(pair.alice)
        let notice = events.wait { isSharedNotice($0) }
        guard case .transportNotice(let n) = notice else { Issue.record("no notice"); return }
        #expect(n.transport == "relay")
        #expect(n.message.contains("c.example:4433") && n.message.contains("a.example:4433"))
        #expect(!n.message.contains("b.example:4433"))
        #expect(events.all.filter(isSharedNotice).count == 1)
        #expect(pair.alice.routesSharingRelayIdentifier(route: first.address) == [copy.address])
        #expect(pair.alice.routesSharingRelayIdentifier(route: copy.address) == [first.address])
        #expect(pair.alice.routesSharingRelayIdentifier(route: other.address).isEmpty)
        // The first relay logging in again (every hour) says nothing new; a third address
        // stating the identifier does (events come in order: once its notice is here, one
        // for the re-login would be too).
        first.disconnect(pair.alice)
        try first.connect(pair.alice)
        let third = MemoryRelay(identifier: [UInt8](repeating: 0x11, count: 16), address: "d.example:4433")
        try third.connect(pair.alice)
        #expect(events.wait { sharedNotice($0)?.hasPrefix("The relays at d.example:4433 and a.example:4433, c.example:4433") == true } != nil)
        #expect(events.all.filter(isSharedNotice).count == 2)
    }

    @Test func theSameRelayReconnectingIsNotASecondRelay() throws {
        let pair = try Pair()
        defer { pair.close() }
        let relay = MemoryRelay(address: "a.example:4433")
        try relay.connect(pair.alice)
        relay.disconnect(pair.alice)
        try relay.connect(pair.alice)
        #expect(pair.alice.routesSharingRelayIdentifier(route: relay.address).isEmpty)
    }

    @Test func theStatedIdentifiersTableIsBounded() {
        var table = StatedRelayIdentifiers()
        let n = StatedRelayIdentifiers.maxRoutes + 10
        for i in 0..<n { _ = table.stated([UInt8](repeating: UInt8(i % 200), count: 16), at: "r\(i)", now: Int64(i)) }
        #expect(table.byRoute.count == StatedRelayIdentifiers.maxRoutes)
        #expect(table.byRoute["r0"] == nil, "the route heard from longest ago goes first")
        #expect(table.byRoute["r\(n - 1)"] != nil)
    }

    @Test func theMissesTableIsBounded() {
        var watch = CarrierAckWatch()
        let n = CarrierAckWatch.maxRoutes + 10
        for i in 0..<n { _ = watch.countMisses(1, at: "r\(i)", now: Int64(i)) }
        #expect(watch.misses.count == CarrierAckWatch.maxRoutes)
        #expect(watch.misses["r0"] == nil, "the route whose last miss is oldest goes first")
        #expect(watch.misses["r\(n - 1)"]?.count == 1)
        // A route already there is counted, not pushed out.
        #expect(watch.countMisses(2, at: "r\(n - 1)", now: Int64(n)) == false)
        #expect(watch.misses["r\(n - 1)"]?.count == 3)
        #expect(watch.misses.count == CarrierAckWatch.maxRoutes)
    }
}
