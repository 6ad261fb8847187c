import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
import YaOKCrypto
@testable import YaOKTransports

/// Whom the transport connects to when anyone nearby can advertise anything from any address
/// (PROTOCOL.md §9.2): fake advertisers that never accept must not keep a real peer from being
/// tried, nor redraw our token at every failure, nor push peers we are linked with out of the
/// table. On the state, without Bluetooth: an attempt here goes no further than the kernel.
@Suite(.serialized) struct BLEDiscoveryPolicyTests {
    static func address(_ n: Int) -> BLEAddress {
        BLEAddress(bytes: [0x00, 0xAA, 0x03, UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)], kind: .lePublic)
    }

    static func running(_ t: BLETransport, _ s: inout BLEState) {
        s.running = true
        s.adapter = BLEAdapter(index: 0, address: address(0xfffff0), powered: true, instance: 1)
        s.token = [UInt8](repeating: 0x10, count: 8)
    }

    static func peer(_ token: [UInt8], seen: UInt64 = 0) -> BLEPeer {
        BLEPeer(token: token, rssi: -50, firstSeenMs: 0, lastSeenMs: 0, lastSeen: seen)
    }

    /// 30 fakes (token ff…ff: always ours to connect) at addresses below a real peer's; each
    /// attempt takes `connectTimeout` and fails. Tried in address order with only the 5 s
    /// interval, the first fake is due again at every turn and the real peer is never tried;
    /// with the fair order and the backoff it is tried within one attempt per fake.
    @Test func fakeAdvertisersDoNotStarveARealPeer() throws {
        let t = try BLETransport()
        let fake = [UInt8](repeating: 0xff, count: 8)
        let real = Self.address(0xffff00)
        t.state.withLock { s in
            Self.running(t, &s)
            var now = EventLoop.monotonicNanoseconds()
            for n in 0..<30 { s.discovered[Self.address(n)] = Self.peer(fake, seen: now) }
            s.discovered[real] = Self.peer([UInt8](repeating: 0xf0, count: 8), seen: now)
            var tried: [BLEAddress] = []
            for _ in 0..<60 {
                guard let pick = t.attemptOrderLocked(&s, now: now).first else {
                    now += BLETransport.nanoseconds(1)
                    continue
                }
                tried.append(pick)
                if pick == real { break }
                s.discovered[pick]?.lastAttempt = now
                now += BLETransport.nanoseconds(t.options.connectTimeout)
                t.handOverLocked(&s, pick, now: now)  // the connect timed out
            }
            #expect(tried.last == real)
            #expect(tried.count <= 31, "the real peer was tried after \(tried.count - 1) fakes")
            #expect(Set(tried.dropLast()).count == tried.count - 1, "a fake was tried twice before the real peer")
        }
    }

    /// Each failure in a row doubles the wait before the next attempt, up to the cap; a
    /// channel that opens ends the backoff.
    @Test func backoffDoublesPerAddress() throws {
        var options = BLETransport.Options()
        options.maxConnectBackoff = 60
        let t = try BLETransport(options: options)
        let a = Self.address(1)
        t.state.withLock { s in
            Self.running(t, &s)
            let start = EventLoop.monotonicNanoseconds()
            s.discovered[a] = Self.peer([UInt8](repeating: 0xf0, count: 8), seen: start)
            var waits: [Double] = []
            for _ in 0..<6 {
                t.handOverLocked(&s, a, now: start)
                waits.append(Double(s.discovered[a]!.retryAt - start) / 1e9)
            }
            #expect(waits == [5, 10, 20, 40, 60, 60])
            #expect(s.discovered[a]?.failures == 6)
            s.token = [UInt8](repeating: 0x10, count: 8)  // ours to connect (the first failure handed over)
            // Not before its time…
            #expect(!t.refreshPeerLocked(&s, a, now: start + BLETransport.nanoseconds(59)))
            #expect(t.refreshPeerLocked(&s, a, now: start + BLETransport.nanoseconds(61)))
            // …and a channel with it resets it.
            s.connections[99] = BLEConnection(id: 99, fd: -1, remote: a, direction: .inbound, phase: .open,
                                              now: start, nowMs: 0)
            _ = t.refreshPeerLocked(&s, a, now: start)
            #expect(s.discovered[a]?.failures == 0 && s.discovered[a]?.retryAt == 0)
            s.connections.removeAll()
        }
    }

    /// Twenty fakes whose connects fail in a row draw our token once, not twenty times: a
    /// hand-over is made at most once per `handOverInterval`.
    @Test func failedConnectsCannotKeepRedrawingTheToken() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            Self.running(t, &s)
            let now = EventLoop.monotonicNanoseconds()
            for n in 0..<20 {
                // Larger than ours and not ff…ff: a token larger still can be drawn.
                s.discovered[Self.address(n)] = Self.peer([0x80] + [UInt8](repeating: UInt8(n), count: 7), seen: now)
            }
            let drawn = s.tokensDrawn
            for n in 0..<20 {
                s.token = [UInt8](repeating: 0x10, count: 8)  // ours to connect again
                t.handOverLocked(&s, Self.address(n), now: now + BLETransport.nanoseconds(Double(n)))
            }
            #expect(s.tokensDrawn - drawn == 1 && s.handOvers == 1 && s.handOversRefused == 19)
            // Once the interval has passed, the next first failure may hand over again.
            s.token = [UInt8](repeating: 0x10, count: 8)
            s.discovered[Self.address(50)] = Self.peer([UInt8](repeating: 0x80, count: 8), seen: now)
            t.handOverLocked(&s, Self.address(50), now: now + BLETransport.nanoseconds(t.options.handOverInterval + 20))
            #expect(s.tokensDrawn - drawn == 2 && s.handOvers == 2)
            // A second failure of the same address does not.
            s.token = [UInt8](repeating: 0x10, count: 8)
            t.handOverLocked(&s, Self.address(50), now: now + BLETransport.nanoseconds(3 * t.options.handOverInterval))
            #expect(s.tokensDrawn - drawn == 2)
        }
    }

    /// Failures that say nothing about the peer are not counted: our adapter off, or stop.
    @Test func ourOwnFailuresDoNotBackOff() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            Self.running(t, &s)
            s.discovered[Self.address(1)] = Self.peer([UInt8](repeating: 0x80, count: 8))
            s.adapter?.powered = false
            t.handOverLocked(&s, Self.address(1))
            s.adapter?.powered = true
            s.running = false
            t.handOverLocked(&s, Self.address(1))
            #expect(s.discovered[Self.address(1)]?.failures == 0 && s.tokensDrawn == 0 && s.connectFailures == 0)
        }
    }

    /// A table full of fakes makes room by dropping a never-linked, least recently heard
    /// peer; never one we have a channel with, and a peer linked before goes last. With only
    /// channel-holding peers left, a newcomer is refused rather than one of them dropped.
    @Test func aFullTableNeverDropsLinkedPeers() throws {
        var options = BLETransport.Options()
        options.maxDiscoveredPeers = 4
        let t = try BLETransport(options: options)
        let withChannel = Self.address(1), linkedBefore = Self.address(2)
        t.state.withLock { s in
            Self.running(t, &s)
            s.running = false  // no attempts: only the table is under test
            // Heard first (so least recently): the two that matter.
            s.discovered[withChannel] = Self.peer([UInt8](repeating: 0x80, count: 8), seen: 1)
            s.discovered[linkedBefore] = Self.peer([UInt8](repeating: 0x81, count: 8), seen: 2)
            s.recentlyLinked.set(linkedBefore, true)
            s.discovered[linkedBefore]?.linked = true
            s.connections[7] = BLEConnection(id: 7, fd: -1, remote: withChannel, direction: .outbound, phase: .open,
                                             now: 0, nowMs: 0)
            for n in 100..<400 {
                t.heardLocked(&s, BLEAdvert(token: Sodium.randomBytes(8)), from: Self.address(n), rssi: -70)
                #expect(s.discovered.count <= 4)
            }
            #expect(s.discovered[withChannel] != nil && s.discovered[linkedBefore] != nil)
            #expect(s.discovered[Self.address(399)] != nil)
            // Only channel holders: the newcomer is refused.
            s.discovered = [withChannel: Self.peer([UInt8](repeating: 0x80, count: 8))]
            for n in 2...4 {
                let a = Self.address(1000 + n)
                s.discovered[a] = Self.peer([UInt8](repeating: 0x80, count: 8))
                s.connections[UInt64(n)] = BLEConnection(id: UInt64(n), fd: -1, remote: a, direction: .inbound, phase: .open,
                                                         now: 0, nowMs: 0)
            }
            t.heardLocked(&s, BLEAdvert(token: Sodium.randomBytes(8)), from: Self.address(5000), rssi: -70)
            #expect(s.discovered[Self.address(5000)] == nil && s.peersRefused == 1 && s.discovered.count == 4)
            s.connections.removeAll()
        }
    }

    /// The PSM a peer's advertisement names is the one connected to (version 2); 0x0081 for
    /// version 1.
    @Test func theAdvertisedPSMIsConnectedTo() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            s.token = [UInt8](repeating: 0xf0, count: 8)  // theirs to connect: no attempts here
            let v2 = BLEAdvert(parsing: BLEAdvert(token: [UInt8](repeating: 0x01, count: 8), psm: 0xc3).encoded)!
            let v1 = BLEAdvert(parsing: BLEAdvert(token: [UInt8](repeating: 0x02, count: 8)).encodedVersion1)!
            t.heardLocked(&s, v2, from: Self.address(1), rssi: -40)
            t.heardLocked(&s, v1, from: Self.address(2), rssi: -40)
            #expect(t.connectPSMLocked(s, Self.address(1)) == 0x00c3)
            #expect(t.connectPSMLocked(s, Self.address(2)) == 0x0081)
            #expect(t.connectPSMLocked(s, Self.address(3)) == t.options.psm)
        }
    }

    /// A Ya OK advert that is not connectable is ignored (it cannot lead to a channel).
    @Test func notConnectableAdvertsAreIgnored() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            Self.running(t, &s)
            s.running = false
            let eir = BLEAdvert(token: [UInt8](repeating: 0x80, count: 8), psm: 0x81).encoded
            _ = t.handleLocked(&s, .deviceFound(index: 0, address: Self.address(1), rssi: -40,
                                                flags: Mgmt.DeviceFoundFlag.notConnectable, eir: eir))
            #expect(s.discovered.isEmpty && s.notConnectableIgnored == 1)
            _ = t.handleLocked(&s, .deviceFound(index: 0, address: Self.address(1), rssi: -40, flags: 0, eir: eir))
            #expect(s.discovered[Self.address(1)] != nil)
        }
    }
}
