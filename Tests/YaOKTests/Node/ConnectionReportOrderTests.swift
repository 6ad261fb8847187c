import Testing
@testable import YaOKSupport
@testable import YaOKNode

/// A transport that reports its connection from two threads at once (the relay: its loop,
/// and a stop or unlock on another thread) reads the state under its lock and reports it
/// after: the reports can reach the node in the other order. Each carries the sequence it
/// was read with (`TransportConnection.nextSequence`), and the node drops one older than a
/// report it already took, so neither the state nor the events end on the older reading.
@Suite struct ConnectionReportOrderTests {
    /// Reports nothing by itself: the test reports for it.
    final class Radio: Transport, @unchecked Sendable {
        let name = "radio"
        let displayName = "Radio"
        func start(on node: Node) throws {}
        func stop() {}
        func diagnostics() -> JSON { .object([]) }
        var connection: TransportConnection? { .connecting }
    }

    func radio(_ node: Node) -> TransportConnection? { node.transports().first { $0.name == "radio" }?.connection }

    @Test func anOlderReportArrivingLastIsDropped() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        defer { node.close() }
        let events = EventRecorder()
        events.attach(to: node)
        try node.addTransport(Radio())
        try node.setTransport("radio", enabled: true)

        // Read in this order: connecting (a), then connected (b); reported b first, a last.
        let a = TransportConnection.nextSequence()
        let b = TransportConnection.nextSequence()
        #expect(b > a)
        node.reportConnection("radio", .connected, sequence: b)
        node.reportConnection("radio", .connecting, sequence: a)
        #expect(radio(node) == .connected)

        // A newer report still goes through, and the events show no "connecting" after the
        // connect (the stale report made none).
        let down = TransportConnection(state: .disconnected, reason: .closed, detail: "gone")
        node.reportConnection("radio", down, sequence: TransportConnection.nextSequence())
        #expect(radio(node) == down)
        #expect(events.wait { if case .transportConnection("radio", down) = $0 { return true } else { return false } } != nil)
        let states = events.all.compactMap { e -> TransportConnection.State? in
            if case .transportConnection("radio", let c) = e { return c.state } else { return nil }
        }
        let afterConnect = states.drop { $0 != .connected }
        #expect(Array(afterConnect) == [.connected, .disconnected])

        // Reports without a sequence (a transport that reports from one thread) are taken.
        node.reportConnection("radio", .connected)
        #expect(radio(node) == .connected)
    }
}

/// A transport that reports during its own start or stop (a relay that connects before
/// `start` returns; one whose `stop` says "disabled") is announced once per change, not
/// again by the start or stop itself.
@Suite struct ConnectionAnnouncedOnceTests {
    final class QuickRadio: Transport, @unchecked Sendable {
        let name = "quick"
        let displayName = "Quick"
        private let node = Locked<Node?>(nil)
        func start(on node: Node) throws {
            self.node.withLock { $0 = node }
            node.reportConnection(name, .connected, sequence: TransportConnection.nextSequence())
        }
        func stop() {
            node.withLock { $0 }?.reportConnection(name, TransportConnection(state: .disconnected, reason: .disabled),
                                                   sequence: TransportConnection.nextSequence())
        }
        func diagnostics() -> JSON { .object([]) }
        var connection: TransportConnection? { .connected }
    }

    @Test func aReportDuringStartOrStopIsNotAnnouncedTwice() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        defer { node.close() }
        let events = EventRecorder()
        events.attach(to: node)
        try node.addTransport(QuickRadio())
        try node.setTransport("quick", enabled: true)
        try node.setTransport("quick", enabled: false)
        // A marker after both, so every event before it has arrived.
        node.reportConnection("quick", .connecting)
        #expect(events.wait { if case .transportConnection("quick", .connecting) = $0 { return true } else { return false } } != nil)
        let states = events.all.compactMap { e -> String? in
            if case .transportConnection("quick", let c) = e { return "\(c.state)/\(c.reason?.rawValue ?? "-")" } else { return nil }
        }
        #expect(states == ["connected/-", "disconnected/disabled", "connecting/-"])
    }
}
