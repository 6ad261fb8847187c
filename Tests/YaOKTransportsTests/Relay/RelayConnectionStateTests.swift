import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKNode
@testable import YaOKTransports

/// The relay transport's connection as an app shows it (issue 21 §3): a wrong pin is
/// disconnected with the reason, not "running"; a relay that goes away is disconnected with
/// the next retry and connected again when it is back; each change is an event, and so is
/// "Internet: Available/Unavailable".
@Suite(.serialized) struct RelayConnectionStateTests {
    final class Recorder: @unchecked Sendable {
        private let seen = Locked<[NodeEvent]>([])
        func record(_ e: NodeEvent) { seen.withLock { $0.append(e) } }
        var connections: [TransportConnection] {
            seen.withLock { $0.compactMap { if case .transportConnection("relay", let c) = $0 { return c } else { return nil } } }
        }
        var internet: [InternetStatus] {
            seen.withLock { $0.compactMap { if case .internetChanged(let i) = $0 { return i } else { return nil } } }
        }
    }

    func relayConnection(_ node: Node) -> TransportConnection? { node.transports().first { $0.name == "relay" }?.connection }

    @Test func aWrongPinIsDisconnectedWithThePinMismatchNotRunning() throws {
        let relay = try LocalRelay()
        defer { relay.remove() }
        try relay.start()
        let pair = try RelayPair()
        defer { pair.close() }
        let events = Recorder()
        pair.alice.setEventHandler { events.record($0) }
        try pair.attach(pair.alice, port: relay.port, pin: [UInt8](repeating: 7, count: 32))
        try waitUntil("disconnected") { relayConnection(pair.alice)?.reason == .pinMismatch }
        let c = try #require(relayConnection(pair.alice))
        #expect(c.state == .disconnected)
        #expect(c.detail?.contains("does not match the pinned key") == true)
        #expect(c.nextRetryMs != nil)
        #expect(pair.alice.transports().first { $0.name == "relay" }?.phase == .running)
        try waitUntil("an event") { events.connections.contains { $0.reason == .pinMismatch } }
        #expect(!events.connections.contains { $0.state == .connected })
        // The server answered: the network works.
        #expect(pair.alice.internet().relay == .answers && pair.alice.internet().available)
    }

    @Test func aRelayKilledIsDisconnectedWithARetryAndConnectedWhenBack() throws {
        let relay = try LocalRelay()
        defer { relay.remove() }
        try relay.start()
        let port = relay.port
        let pair = try RelayPair()
        defer { pair.close() }
        let events = Recorder()
        pair.alice.setEventHandler { events.record($0) }
        try pair.attach(pair.alice, port: port, pin: relay.pin)
        try waitUntil("connected") { relayConnection(pair.alice)?.state == .connected }
        #expect(pair.alice.internet().available)

        relay.stop()
        try waitUntil("refused") { relayConnection(pair.alice)?.reason == .refused }
        #expect(relayConnection(pair.alice)?.nextRetryMs != nil)
        #expect(!pair.alice.internet().available && pair.alice.internet().relay == .noAnswer)
        try waitUntil("internet down announced") { events.internet.last?.available == false }

        try relay.start(port: port)
        try waitUntil("connected again", timeout: 10) { relayConnection(pair.alice)?.state == .connected }
        try waitUntil("internet up announced") { events.internet.last?.available == true }
        let states = events.connections.map(\.state)
        #expect(states.filter { $0 == .connected }.count == 2, "\(events.connections.map { "\($0.state)/\($0.reason?.rawValue ?? "-")/\($0.detail ?? "")" })")
        #expect(states.contains(.disconnected) && states.contains(.connecting))
    }

    @Test func aTransportThatReportsNothingIsConnectedWhileItRuns() throws {
        let pair = try RelayPair()
        defer { pair.close() }
        try pair.alice.addTransport(FakeTransport(name: "fake"))
        #expect(pair.alice.transports().first?.connection == TransportConnection(state: .disconnected, reason: .disabled))
        try pair.alice.setTransport("fake", enabled: true)
        #expect(pair.alice.transports().first?.connection == .connected)
    }
}

/// A transport with no connection of its own (as LAN and BLE).
final class FakeTransport: Transport, @unchecked Sendable {
    let name: String
    let displayName = "Fake"
    init(name: String) { self.name = name }
    func start(on node: Node) throws {}
    func stop() {}
    func diagnostics() -> JSON { .object([]) }
}

@Suite struct DefaultRouteTests {
    @Test func anIPv4DefaultRouteIsFound() {
        let table = """
        Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
        eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
        eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
        """
        #expect(DefaultRoute.inIPv4Table(table))
        // Only the local network: no default route.
        #expect(!DefaultRoute.inIPv4Table(table.split(separator: "\n").enumerated().filter { $0.offset != 1 }.map { String($0.element) }.joined(separator: "\n")))
        // A default route that is down (flags without RTF_UP) does not count.
        #expect(!DefaultRoute.inIPv4Table(table.replacingOccurrences(of: "\t0003\t", with: "\t0002\t")))
        #expect(!DefaultRoute.inIPv4Table(""))
    }

    @Test func anIPv6DefaultRouteIsFoundButNotLoopbacksUnreachableOne() {
        let zero = String(repeating: "0", count: 32)
        let up = "\(zero) 00 \(zero) 00 fd000000000000000000000000000001 00000400 00000003 00000000 00000003     eth0"
        let lo = "\(zero) 00 \(zero) 00 \(zero) ffffffff 00000001 00000000 00200200       lo"
        #expect(DefaultRoute.inIPv6Table(up))
        #expect(!DefaultRoute.inIPv6Table(lo))
    }

    @Test func theRelaysAnswerDecidesOverTheDefaultRoute() {
        #expect(InternetStatus(defaultRoute: false, relay: .answers).available)
        #expect(!InternetStatus(defaultRoute: true, relay: .noAnswer).available)
        #expect(InternetStatus(defaultRoute: true, relay: .none).line == "Internet: Available")
        #expect(InternetStatus(defaultRoute: false, relay: .unknown).line == "Internet: Unavailable")
    }
}
