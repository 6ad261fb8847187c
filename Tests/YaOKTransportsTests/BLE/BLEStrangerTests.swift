import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKTransports

/// Anyone can complete the handshake with an identity made for the purpose (PROTOCOL.md
/// §9.2): a stranger's authenticated channel must not hold a slot for good. On real channel
/// code over socketpairs (`BLEChannelHarness`), the node's answer played by `FakeLink`.
@Suite(.serialized) struct BLEStrangerTests {
    /// Three inbound slots held by a contact and two strangers, all authenticated: a new
    /// channel takes the oldest stranger's slot, never the contact's.
    @Test func strangersAreEvictedForANewChannel() throws {
        let h = try BLEChannelHarness { $0.maxConnections = 4; $0.maxStrangerChannels = 3 }
        defer { h.close() }
        let contact = try #require(try h.accept(from: bleAddress(1)))
        let stranger1 = try #require(try h.accept(from: bleAddress(2)))
        let stranger2 = try #require(try h.accept(from: bleAddress(3)))
        for (c, isContact) in [(contact, true), (stranger1, false), (stranger2, false)] {
            c.link.authenticate()
            c.link.setContact(isContact)
        }
        h.transport.refreshAuthentication()
        let newcomer = try #require(try h.accept(from: bleAddress(4)), "refused: strangers held every slot")
        #expect(stranger1.link.closedBecause?.contains("not a contact") == true && peerSeesClose(stranger1.peer))
        #expect(h.connection(contact.id) != nil && h.connection(stranger2.id) != nil && h.connection(newcomer.id) != nil)
        // Contacts (and peers a locked node cannot place) are never evicted.
        stranger2.link.setContact(nil)
        newcomer.link.authenticate()
        newcomer.link.setContact(true)
        h.transport.refreshAuthentication()
        #expect(try h.accept(from: bleAddress(5)) == nil)
    }

    /// A stranger's channel is closed `strangerGracePeriod` after it authenticated; a
    /// contact's is not, nor one whose peer the node cannot place (locked).
    @Test func aStrangerIsClosedAfterItsGracePeriod() throws {
        let h = try BLEChannelHarness()
        defer { h.close() }
        let stranger = try #require(try h.accept(from: bleAddress(1)))
        let contact = try #require(try h.accept(from: bleAddress(2)))
        let unknown = try #require(try h.accept(from: bleAddress(3)))
        for (c, value) in [(stranger, false), (contact, true), (unknown, nil) as (BLEChannelHarness.Channel, Bool?)] {
            c.link.authenticate()
            c.link.setContact(value)
        }
        let start = EventLoop.monotonicNanoseconds()
        h.transport.sweepConnections(now: start + BLETransport.nanoseconds(5))
        #expect(!stranger.link.isClosed, "closed before its grace period")
        h.transport.sweepConnections(now: start + BLETransport.nanoseconds(h.transport.options.strangerGracePeriod + 1))
        #expect(stranger.link.closedBecause?.contains("not a contact") == true && peerSeesClose(stranger.peer))
        #expect(!contact.link.isClosed && !unknown.link.isClosed)
        // Not connected to again soon, and not "linked" for the fair order.
        h.transport.state.withLock { s in
            #expect(s.recentStrangers.contains(bleAddress(1)) && !s.recentlyLinked.contains(bleAddress(1)))
            #expect(s.recentlyLinked.contains(bleAddress(2)) && !s.recentlyLinked.contains(bleAddress(3)))
        }
    }

    /// At most `maxStrangerChannels` strangers at once: the newest beyond are closed.
    @Test func strangerChannelsAreCapped() throws {
        let h = try BLEChannelHarness { $0.maxStrangerChannels = 2 }
        defer { h.close() }
        var channels: [BLEChannelHarness.Channel] = []
        for n in 1...4 {
            let c = try #require(try h.accept(from: bleAddress(n)))
            c.link.authenticate()
            c.link.setContact(false)
            channels.append(c)
        }
        h.transport.sweepConnections(now: EventLoop.monotonicNanoseconds())
        #expect(channels.map { $0.link.isClosed } == [false, false, true, true])
        #expect(h.transport.state.withLock { $0.strangersClosed } == 2)
    }

    /// An outbound connect (from the tick) finds the flags fresh: an inbound channel that
    /// authenticated a moment ago is not evicted as unfinished.
    @Test func aConnectDoesNotEvictAChannelThatJustAuthenticated() throws {
        let h = try BLEChannelHarness { $0.maxConnections = 1; $0.reservedOutboundSlots = 0 }
        defer { h.close() }
        let inbound = try #require(try h.accept(from: bleAddress(1)))
        inbound.link.authenticate()  // the transport has not asked yet
        inbound.link.setContact(true)
        h.transport.state.withLock { s in
            s.adapter = BLEAdapter(index: 0, address: bleAddress(0xfff0), powered: true, instance: 1)
            s.token = [UInt8](repeating: 0x10, count: 8)
            // Ours to connect (the larger token), heard just now.
            s.discovered[bleAddress(2)] = BLEPeer(token: [UInt8](repeating: 0xf0, count: 8), rssi: -50, firstSeenMs: 0,
                                                  lastSeenMs: 0, lastSeen: EventLoop.monotonicNanoseconds())
        }
        h.transport.tick(run: h.transport.state.withLock { $0.run })
        #expect(!inbound.link.isClosed, "evicted: \(inbound.link.closedBecause ?? "")")
        #expect(h.connection(inbound.id) != nil)
    }
}
