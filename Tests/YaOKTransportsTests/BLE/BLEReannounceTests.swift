import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
import YaOKCrypto
@testable import YaOKTransports

/// Re-announcing (PROTOCOL.md §9.2): a peer whose turn it is to connect, and which has not,
/// may not have heard us; our advertising is set up again for it, on the tick's virtual
/// clock (`keepDiscoveringLocked`), long before the 30 s fallback.
@Suite(.serialized) struct BLEReannounceTests {
    static let second: UInt64 = 1_000_000_000
    /// A virtual clock far from the real one.
    static let start: UInt64 = 1_000_000 * second

    /// A running transport on the fake kernel, advertising since `start`, with a token larger
    /// than `smaller` (so a peer with that token is the one to connect).
    static func running(_ kernel: FakeMgmtKernel, _ mgmt: MgmtSocket,
                        _ options: BLETransport.Options = BLETransport.Options()) throws -> BLETransport {
        let t = try BLETransport(options: options, system: kernel.system)
        t.state.withLock { s in
            BLEDiscoveryPolicyTests.running(t, &s)
            s.token = [UInt8](repeating: 0x80, count: 8)
            s.mgmt = mgmt
            s.advertising = true
            s.advertisingSince = start
            // A discovery run is on and young: the tick asks nothing about discovery.
            s.discovering = true
            s.discoveryStartedAt = start + 1_000 * second
        }
        return t
    }

    static let smaller = [UInt8](repeating: 0x10, count: 8)

    /// The Add Advertising commands the fake kernel received, once `barrier` (a Read Info
    /// sent after the steps) shows it has read everything before it.
    static func addAdvertisings(_ kernel: FakeMgmtKernel, after mgmt: MgmtSocket) throws -> [FakeMgmtKernel.Command] {
        mgmt.send(Mgmt.command(.readInfo, index: 0))
        try waitUntil("the barrier command") { kernel.commands.contains { $0.op == Mgmt.Op.readInfo.rawValue } }
        return kernel.commands.filter { $0.op == Mgmt.Op.addAdvertising.rawValue }
    }

    /// We heard the peer at `start`; it should connect and does not. Before: nothing until
    /// our own fallback connect at 30 s (the 31 s discovery of issue 20). Now: our
    /// advertising, same token, is set up again 2 s after, then at most every 2 s.
    @Test func aPeerThatShouldConnectAndDoesNotIsReannouncedTo() throws {
        let kernel = try FakeMgmtKernel()
        defer { kernel.close() }
        let mgmt = try kernel.open()
        defer { mgmt.close() }
        let t = try Self.running(kernel, mgmt)
        let peer = BLEDiscoveryPolicyTests.address(1)
        let token = t.state.withLock { s -> [UInt8] in
            t.heardLocked(&s, BLEAdvert(token: Self.smaller), from: peer, rssi: -40, now: Self.start)
            #expect(s.discovered[peer]?.lastAttempt == nil, "not ours to connect")
            t.keepDiscoveringLocked(&s, now: Self.start + Self.second)
            #expect(s.reannounces == 0, "too soon: its connect may be under way")
            t.keepDiscoveringLocked(&s, now: Self.start + 2 * Self.second + Self.second / 2)
            #expect(s.reannounces == 1)
            t.keepDiscoveringLocked(&s, now: Self.start + 4 * Self.second)
            #expect(s.reannounces == 1, "at most one per reannounceInterval (2 s)")
            t.keepDiscoveringLocked(&s, now: Self.start + 7 * Self.second)
            #expect(s.reannounces == 2)
            #expect(s.tokensDrawn == 0, "the same token: the peer keeps its role")
            return s.token
        }
        let adds = try Self.addAdvertisings(kernel, after: mgmt)
        #expect(adds.count == 2)
        let advert = BLEAdvert(token: token, psm: t.options.psm).encoded
        #expect(adds.allSatisfy { $0.parameters == Mgmt.addAdvertisingParameters(instance: 1, data: advert) })
    }

    /// Not when it is ours to connect, when a channel with the peer exists, once our own
    /// fallback is due (we connect then), nor while we make an outbound connect.
    @Test func onlyWhileThePeerShouldConnectAndHasNot() throws {
        let kernel = try FakeMgmtKernel()
        defer { kernel.close() }
        let mgmt = try kernel.open()
        defer { mgmt.close() }
        let t = try Self.running(kernel, mgmt)
        let peer = BLEDiscoveryPolicyTests.address(1)
        t.state.withLock { s in
            // Ours to connect (a larger token): we do, no re-announcing.
            s.discovered[peer] = BLEDiscoveryPolicyTests.peer([UInt8](repeating: 0xf0, count: 8), seen: Self.start)
            s.discovered[peer]?.unconnectedSince = Self.start
            t.keepDiscoveringLocked(&s, now: Self.start + 3 * Self.second)
            // Theirs, but heard 30 s without a channel: our fallback connect is due instead.
            s.discovered[peer]?.token = Self.smaller
            t.keepDiscoveringLocked(&s, now: Self.start + 31 * Self.second)
            // Theirs, and a channel with it exists.
            s.discovered[peer]?.unconnectedSince = Self.start
            s.connections[1] = BLEConnection(id: 1, fd: -1, remote: peer, direction: .inbound, phase: .open,
                                             now: Self.start, nowMs: 0)
            t.keepDiscoveringLocked(&s, now: Self.start + 3 * Self.second)
            // An outbound connect to someone else is in progress.
            s.connections[1] = BLEConnection(id: 1, fd: -1, remote: BLEDiscoveryPolicyTests.address(2), direction: .outbound,
                                             phase: .connecting, now: Self.start, nowMs: 0)
            t.keepDiscoveringLocked(&s, now: Self.start + 3 * Self.second)
            #expect(s.reannounces == 0)
            s.connections.removeAll()
        }
        #expect(try Self.addAdvertisings(kernel, after: mgmt).isEmpty)
    }

    /// Both sides may start advertising before the other scans, and then neither hears the
    /// other: having heard nobody 2 s after starting, a node re-announces once.
    @Test func havingHeardNobodyANodeReannouncesOnce() throws {
        let kernel = try FakeMgmtKernel()
        defer { kernel.close() }
        let mgmt = try kernel.open()
        defer { mgmt.close() }
        let t = try Self.running(kernel, mgmt)
        t.state.withLock { s in
            t.keepDiscoveringLocked(&s, now: Self.start + Self.second)
            #expect(s.reannounces == 0)
            t.keepDiscoveringLocked(&s, now: Self.start + 2 * Self.second)
            #expect(s.reannounces == 1)
            t.keepDiscoveringLocked(&s, now: Self.start + 60 * Self.second)
            #expect(s.reannounces == 1, "once per start or power-on, not for ever")
        }
        #expect(try Self.addAdvertisings(kernel, after: mgmt).count == 1)
    }

    /// A peer heard just after that one re-announcement (it started scanning just too late
    /// for it) is re-announced to 2 s after it was heard, not only once the interval since
    /// the last (here 4 s) has passed.
    @Test func aPeerHeardAfterTheLastReannouncementIsNotHeldUpByIt() throws {
        let kernel = try FakeMgmtKernel()
        defer { kernel.close() }
        let mgmt = try kernel.open()
        defer { mgmt.close() }
        var options = BLETransport.Options()
        options.reannounceInterval = 4
        let t = try Self.running(kernel, mgmt, options)
        t.state.withLock { s in
            t.keepDiscoveringLocked(&s, now: Self.start + 2 * Self.second)
            #expect(s.reannounces == 1)
            let heard = Self.start + 2 * Self.second + Self.second / 10
            t.heardLocked(&s, BLEAdvert(token: Self.smaller), from: BLEDiscoveryPolicyTests.address(1), rssi: -40, now: heard)
            t.keepDiscoveringLocked(&s, now: heard + Self.second)
            #expect(s.reannounces == 1)
            t.keepDiscoveringLocked(&s, now: heard + 2 * Self.second)
            #expect(s.reannounces == 2)
        }
        #expect(try Self.addAdvertisings(kernel, after: mgmt).count == 2)
    }
}
