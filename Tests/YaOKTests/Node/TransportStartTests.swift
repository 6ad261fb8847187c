import Testing
@testable import YaOKSupport
@testable import YaOKNode

/// Enabling a running transport changes nothing: a second start moved the relay client to
/// a new session without closing the first, whose carrier's posts then went nowhere
/// (`yaok transport relay on` twice, or an app's switch set on again).
@Suite struct TransportStartTests {
    final class CountingTransport: Transport, @unchecked Sendable {
        let name = "counting"
        let displayName = "Counting"
        let starts = Locked(0), stops = Locked(0)
        func start(on node: Node) throws { starts.withLock { $0 += 1 } }
        func stop() { stops.withLock { $0 += 1 } }
        func diagnostics() -> JSON { .object([]) }
    }

    @Test func enablingARunningTransportDoesNotStartItAgain() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        defer { node.close() }
        let transport = CountingTransport()
        try node.addTransport(transport)
        try node.setTransport("counting", enabled: true)
        try node.setTransport("counting", enabled: true)
        #expect(transport.starts.withLock { $0 } == 1)
        #expect(node.transports().first { $0.name == "counting" }?.phase == .running)
        // Stopped, it starts again.
        try node.setTransport("counting", enabled: false)
        try node.setTransport("counting", enabled: true)
        #expect(transport.starts.withLock { $0 } == 2)
        #expect(transport.stops.withLock { $0 } == 1)
    }
}
