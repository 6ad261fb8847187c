import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
import YaOKCrypto
@testable import YaOKTransports

/// The fair order kept across closes and table churn, newcomers' attempts, and discovery
/// that cannot stop for good (PROTOCOL.md §9.2).
@Suite(.serialized) struct BLEDiscoveryHardeningTests {
    static func peer(_ token: [UInt8], seen: UInt64) -> BLEPeer {
        BLEPeer(token: token, rssi: -50, firstSeenMs: 0, lastSeenMs: 0, lastSeen: seen)
    }

    /// A contact's address stays "linked" after its channel closes (its peer entry is
    /// dropped at the close): heard again, it is tried before strangers.
    @Test func linkedSurvivesAClose() throws {
        let h = try BLEChannelHarness()
        defer { h.close() }
        let c = try #require(try h.accept(from: bleAddress(1)))
        c.link.authenticate()
        c.link.setContact(true)
        h.transport.refreshAuthentication()
        let link = h.transport.state.withLock { s in h.transport.closeLocked(&s, c.id, "test") }
        link?.close(reason: "test")
        h.transport.state.withLock { s in
            s.running = false  // the table only
            h.transport.heardLocked(&s, BLEAdvert(token: Sodium.randomBytes(8)), from: bleAddress(1), rssi: -50)
            #expect(s.discovered[bleAddress(1)]?.linked == true)
        }
    }

    /// A never-linked address gets one attempt per sighting: not tried again from the table
    /// until it is heard again. A linked one is retried as before.
    @Test func aNewcomerGetsOneAttemptPerSighting() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            BLEDiscoveryPolicyTests.running(t, &s)
            let fake = bleAddress(7), linked = bleAddress(8)
            var now = EventLoop.monotonicNanoseconds()
            s.recentlyLinked.set(linked, true)
            for a in [fake, linked] { t.heardLocked(&s, BLEAdvert(token: [UInt8](repeating: 0xf0, count: 8)), from: a, rssi: -50, now: now) }
            t.connectNextLocked(&s, now: now)  // no Bluetooth here: each attempt fails at once
            #expect(s.discovered[fake]?.lastAttempt != nil && s.discovered[linked]?.lastAttempt != nil)
            now += BLETransport.nanoseconds(t.options.connectAttemptInterval + 1)
            let order = t.attemptOrderLocked(&s, now: now)
            #expect(!order.contains(fake) && order.contains(linked))
            // Heard again: tried again, on that sighting.
            t.heardLocked(&s, BLEAdvert(token: [UInt8](repeating: 0xf0, count: 8)), from: fake, rssi: -50, now: now)
            #expect(s.discovered[fake]?.lastAttempt == now)
        }
    }

    /// A connect to a never-linked address is abandoned after `newcomerConnectTimeout`; one
    /// to an address linked lately gets the full `connectTimeout`.
    @Test func aNewcomersConnectTimesOutSooner() throws {
        let h = try BLEChannelHarness()
        defer { h.close() }
        let start = EventLoop.monotonicNanoseconds()
        var pairs: [Int32] = []
        h.transport.state.withLock { s in
            s.recentlyLinked.set(bleAddress(2), true)
            for (id, n) in [(UInt64(900), 1), (UInt64(901), 2)] {
                var fds: [Int32] = [-1, -1]
                _ = socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds)
                pairs.append(fds[1])
                s.connections[id] = BLEConnection(id: id, fd: fds[0], remote: bleAddress(n), direction: .outbound,
                                                  phase: .connecting, now: start, nowMs: 0)
            }
        }
        defer { for fd in pairs { _ = Glibc.close(fd) } }
        h.transport.sweepConnections(now: start + BLETransport.nanoseconds(h.transport.options.newcomerConnectTimeout + 0.5))
        #expect(h.connection(900) == nil && h.connection(901) != nil)
        h.transport.sweepConnections(now: start + BLETransport.nanoseconds(h.transport.options.connectTimeout + 0.5))
        #expect(h.connection(901) == nil)
    }

    /// A real peer heard every second (ours to wait for: its token is the smaller) among a
    /// flood of fresh fake addresses that fill the table: it stays in the table, so its
    /// fallback clock is not reset and the 30 s fallback fires.
    @Test func tableChurnDoesNotResetTheFallback() throws {
        var options = BLETransport.Options()
        options.maxDiscoveredPeers = 8
        let t = try BLETransport(options: options)
        let real = bleAddress(0xffff)
        t.state.withLock { s in
            BLEDiscoveryPolicyTests.running(t, &s)
            let start = EventLoop.monotonicNanoseconds()
            var now = start
            var fakes = 0
            for _ in 0..<35 {
                t.heardLocked(&s, BLEAdvert(token: [UInt8](repeating: 0x01, count: 8)), from: real, rssi: -50, now: now)
                _ = t.refreshPeerLocked(&s, real, now: now)
                for _ in 0..<20 {
                    now += 1_000_000
                    fakes += 1
                    t.heardLocked(&s, BLEAdvert(token: [UInt8](repeating: 0x02, count: 8)), from: bleAddress(fakes), rssi: -50, now: now)
                }
                now = start + BLETransport.nanoseconds(Double(s.discovered[real]?.sightings ?? 0))
            }
            #expect(s.discovered[real]?.unconnectedSince == start)
            // The fallback fired: heard at 30 s, it was tried (here the attempt fails at once).
            #expect(s.discovered[real]?.lastAttempt != nil)
        }
    }

    /// A Stop Discovery whose "Discovering off" never comes: after the deadline discovery is
    /// taken as off and asked for again (it stayed "on", and stopped, for good).
    @Test func aLostDiscoveringOffDoesNotStopDiscovery() throws {
        let kernel = try FakeMgmtKernel()
        defer { kernel.close() }
        let t = try BLETransport(options: BLETransport.Options(), system: kernel.system)
        let mgmt = try kernel.open()
        defer { mgmt.close() }
        let start = EventLoop.monotonicNanoseconds()
        t.state.withLock { s in
            BLEDiscoveryPolicyTests.running(t, &s)
            s.mgmt = mgmt
            s.discovering = true
            s.discoveryStartedAt = start
            t.keepDiscoveringLocked(&s, now: start + BLETransport.nanoseconds(t.options.discoveryRunLength + 0.1))
            #expect(s.discovering && s.discoveryStopRequestedAt != 0)
            // No event arrives.
            t.keepDiscoveringLocked(&s, now: start + BLETransport.nanoseconds(t.options.discoveryRunLength + 1))
            #expect(s.discovering, "gave up waiting too soon")
            t.keepDiscoveringLocked(&s, now: start + BLETransport.nanoseconds(t.options.discoveryRunLength + 0.2
                                                                                + BLETransport.discoveryStopDeadline))
            #expect(!s.discovering && s.discoveryStopsAssumed == 1 && s.discoveryRequestedAt != 0)
        }
        try waitUntil("Start Discovery after the Stop") {
            kernel.commands.map(\.op) == [Mgmt.Op.stopDiscovery.rawValue, Mgmt.Op.startDiscovery.rawValue]
        }
    }
}
