import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKTransports
import YaOKNode

/// A BLE transport that runs its channel code with no Bluetooth: marked running on a fake
/// node, its channels are `socketpair(AF_UNIX, SOCK_SEQPACKET)` ends handed to
/// `acceptChannels` as if accepted (an SDU is a datagram there too). The test keeps the
/// other end of each pair: the peer.
final class BLEChannelHarness {
    let transport: BLETransport
    let opener: FakeOpener
    private var peerEnds: [Int32] = []

    struct Channel {
        let id: UInt64
        /// The transport's end (for filling its send buffer) and the peer's end.
        let fd: Int32
        let peer: Int32
        let link: FakeLink
    }

    init(refuseAfter: Int? = nil, _ adjust: (inout BLETransport.Options) -> Void = { _ in }) throws {
        var options = BLETransport.Options()
        adjust(&options)
        transport = try BLETransport(options: options)
        opener = try FakeOpener(refuseAfter: refuseAfter)
        transport.state.withLock { [opener] s in
            s.running = true
            s.opener = opener
            s.loop = opener.eventLoop
            s.nonBluetoothMTU = 4096
        }
    }

    /// Closes every channel (and so the transport's ends) and the peers' ends.
    func close() {
        transport.stop()
        for fd in peerEnds { _ = Glibc.close(fd) }
        peerEnds = []
    }

    /// A channel from `remote`, as the listener would accept it: the channel, or nil when the
    /// transport refused it (closed its end at once).
    @discardableResult
    func accept(from remote: BLEAddress) throws -> Channel? {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                         0, &fds) == 0 else { throw TimedOut(what: "a socketpair (errno \(errno))") }
        peerEnds.append(fds[1])
        let before = Set(transport.state.withLock { $0.connections.keys })
        var handed = false
        transport.acceptChannels { _ in
            defer { handed = true }
            return handed ? .none : .accepted(fd: fds[0], remote: remote)
        }
        let added = transport.state.withLock { s in s.connections.values.first { !before.contains($0.id) } }
        guard let added else {
            #expect(peerSeesClose(fds[1]), "a refused channel is closed at once")
            return nil
        }
        let link = try #require(opener.links.last)
        return Channel(id: added.id, fd: fds[0], peer: fds[1], link: link)
    }

    func connection(_ id: UInt64) -> BLEConnection? { transport.state.withLock { $0.connections[id] } }
    var count: Int { transport.state.withLock { $0.connections.count } }
}

/// Whether the transport has closed its end: the peer's end reads end-of-file once
/// whatever was sent before is drained. Returns the drained SDU count through `drained`.
func peerSeesClose(_ peer: Int32, drained: UnsafeMutablePointer<Int>? = nil) -> Bool {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = recv(peer, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if n > 0 {
            drained?.pointee += 1
            continue
        }
        if n == 0 { return true }
        if errno == EINTR { continue }
        return false  // EAGAIN: still open
    }
}

/// Fills `fd`'s send buffer (the peer reads nothing) until the kernel says EAGAIN: the
/// next SDU the transport sends is queued. Returns the SDUs it took.
func fillSendBuffer(_ fd: Int32) -> Int {
    let chunk = [UInt8](repeating: 0xee, count: 4000)
    var count = 0
    while send(fd, chunk, chunk.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) == chunk.count { count += 1 }
    return count
}

func bleAddress(_ n: Int) -> BLEAddress {
    BLEAddress(bytes: [0x00, 0xAA, 0x03, UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)], kind: .lePublic)
}

/// The security review's findings on BLE channels (slots, idle channels, an unwatchable
/// socket, the write queue's cap), on real sockets and the transport's real code paths.
@Suite(.serialized) struct BLEConnectionTests {
    // MARK: - Slots

    /// One device cannot hold more than two channels, however many it opens over its one LE
    /// connection: a third is refused while both are authenticated, and while they are not
    /// it only replaces its own oldest; other devices' channels are untouched.
    @Test func oneAddressCannotTakeEverySlot() throws {
        let h = try BLEChannelHarness()
        defer { h.close() }
        let a1 = try #require(try h.accept(from: bleAddress(1)))
        let a2 = try #require(try h.accept(from: bleAddress(1)))
        a1.link.authenticate()
        a2.link.authenticate()
        #expect(try h.accept(from: bleAddress(1)) == nil)
        #expect(h.transport.state.withLock { $0.refused } == 1)

        // A device renewing unfinished channels again and again.
        let b1 = try #require(try h.accept(from: bleAddress(2)))
        var last = b1
        for _ in 0..<20 {
            last = try #require(try h.accept(from: bleAddress(2)))
            let fromB = h.transport.state.withLock { s in s.connections.values.filter { $0.remote == bleAddress(2) }.count }
            #expect(fromB <= 2)
        }
        #expect(h.connection(b1.id) == nil && peerSeesClose(b1.peer))
        #expect(b1.link.closedBecause?.hasPrefix("evicted: ") == true)
        #expect(h.connection(last.id) != nil)
        #expect(h.connection(a1.id) != nil && h.connection(a2.id) != nil && !a1.link.isClosed && !a2.link.isClosed)
        #expect(h.count == 4)
        #expect(h.transport.diagnostics().serialized.contains("\"evicted_connections\":19"))
    }

    /// Inbound channels never take the reserved slot: with every other slot held by
    /// authenticated inbound channels, another inbound one is refused, while our own
    /// connect still finds room.
    @Test func inboundChannelsLeaveASlotForOurConnects() throws {
        let h = try BLEChannelHarness { $0.maxConnections = 4 }
        defer { h.close() }
        for n in 1...3 { try #require(try h.accept(from: bleAddress(n))).link.authenticate() }
        #expect(try h.accept(from: bleAddress(4)) == nil)
        #expect(h.count == 3)
        let room = h.transport.state.withLock { s -> Bool in
            var evicted: [BLETransport.ClosedChannel] = []
            defer { #expect(evicted.isEmpty) }
            return h.transport.makeRoomLocked(&s, for: bleAddress(5), direction: .outbound, evicting: &evicted)
        }
        #expect(room)
    }

    /// When a new channel needs a slot, the oldest channel whose handshake has not finished
    /// goes; authenticated ones stay; when every one is authenticated, the newcomer is
    /// refused. Our own connect evicts the same way.
    @Test func unfinishedHandshakesAreEvictedOldestFirst() throws {
        let h = try BLEChannelHarness { $0.maxConnections = 4 }
        defer { h.close() }
        let x1 = try #require(try h.accept(from: bleAddress(1)))
        let x2 = try #require(try h.accept(from: bleAddress(2)))
        let x3 = try #require(try h.accept(from: bleAddress(3)))
        x2.link.authenticate()  // learnt from the link itself, not set on the transport

        let x4 = try #require(try h.accept(from: bleAddress(4)))
        #expect(h.connection(x1.id) == nil && x1.link.closedBecause?.hasPrefix("evicted: ") == true && peerSeesClose(x1.peer))
        let x5 = try #require(try h.accept(from: bleAddress(5)))
        #expect(h.connection(x3.id) == nil && x3.link.isClosed)
        #expect(h.connection(x2.id) != nil && h.connection(x4.id) != nil && h.connection(x5.id) != nil && !x2.link.isClosed)

        // Our connect needs the fourth slot, then a fifth: x4 (the oldest unfinished) goes.
        let (first, second) = h.transport.state.withLock { s -> (Bool, Bool) in
            var evicted: [BLETransport.ClosedChannel] = []
            let first = h.transport.makeRoomLocked(&s, for: bleAddress(6), direction: .outbound, evicting: &evicted)
            #expect(evicted.isEmpty)
            // A stand-in for the outbound channel that connect would add.
            s.connections[999] = BLEConnection(id: 999, fd: -1, remote: bleAddress(6), direction: .outbound, phase: .connecting,
                                               now: EventLoop.monotonicNanoseconds(), nowMs: 0)
            let second = h.transport.makeRoomLocked(&s, for: bleAddress(7), direction: .outbound, evicting: &evicted)
            #expect(evicted.count == 1)
            s.connections[999] = nil
            return (first, second)
        }
        #expect(first && second)
        #expect(h.connection(x4.id) == nil && h.connection(x5.id) != nil)

        x5.link.authenticate()
        let x8 = try #require(try h.accept(from: bleAddress(8)))  // a slot is free again (x4 went)
        x8.link.authenticate()
        #expect(try h.accept(from: bleAddress(9)) == nil)  // all three authenticated
        #expect(h.connection(x8.id) != nil)
    }

    // MARK: - Hostile input

    /// Whatever a peer sends arrives at its link as it was (the link judges it: LinkNoiseTests),
    /// one SDU per unit, up to the read buffer, which is larger than any receive MTU (a
    /// longer one, which L2CAP cannot deliver, is cut there); the channel stays up.
    @Test func garbageAndOversizedSDUsGoToTheLinkAndTheChannelStays() throws {
        let h = try BLEChannelHarness()
        defer { h.close() }
        let c = try #require(try h.accept(from: bleAddress(1)))
        let junk: [[UInt8]] = [[0], [0xff, 0xfe], (0..<300).map { UInt8($0 & 0xff) }, [UInt8](repeating: 0x5a, count: 70_000)]
        for unit in junk {
            #expect(send(c.peer, unit, unit.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) == unit.count)
        }
        try waitUntil("four SDUs at the link") { c.link.units.count == 4 }
        let units = c.link.units
        #expect(Array(units.prefix(3)) == Array(junk.prefix(3)))
        #expect(units[3] == [UInt8](repeating: 0x5a, count: 65_536))
        #expect(h.connection(c.id) != nil && c.link.closedBecause == nil)
    }

    /// A unit the node refuses closes the channel (as on the LAN: the shared
    /// `ConnectionTransport.deliver`): the SDUs after it never reach the link.
    @Test func aRefusedUnitClosesTheChannel() throws {
        let h = try BLEChannelHarness(refuseAfter: 1)
        defer { h.close() }
        let c = try #require(try h.accept(from: bleAddress(1)))
        #expect(send(c.peer, [1], 1, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) == 1)
        // The channel may close between these two (the event thread reads [2] at once): a
        // send to a closed channel fails, and that is the behaviour under test, not an error.
        for unit: [UInt8] in [[2], [3]] {
            let sent = send(c.peer, unit, unit.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            let error = errno
            #expect(sent == unit.count || (sent == -1 && [EPIPE, ECONNRESET, ENOTCONN].contains(error)))
        }
        try waitUntil("the link to be told") { c.link.isClosed }
        #expect(c.link.units == [[1]])
        #expect(c.link.closedBecause == "the node refused a unit")
        #expect(h.connection(c.id) == nil)
        #expect(peerSeesClose(c.peer))
    }

    // MARK: - Deadlines

    /// A channel whose link has not authenticated the peer within `handshakeTimeout` is
    /// closed; one that is quiet for `idleTimeout` too (keepalives are the node's, on every
    /// link: IdleKeepaliveTests); an SDU received restarts the idle clock.
    @Test func deadlines() throws {
        let h = try BLEChannelHarness { o in
            o.handshakeTimeout = 10
            o.idleTimeout = 90
        }
        defer { h.close() }
        let t0 = EventLoop.monotonicNanoseconds()
        let pending = try #require(try h.accept(from: bleAddress(1)))
        let quiet = try #require(try h.accept(from: bleAddress(2)))
        let talking = try #require(try h.accept(from: bleAddress(3)))
        quiet.link.authenticate()
        talking.link.authenticate()
        let s = BLETransport.nanoseconds
        // The quiet peer last sent something 30 s before t0.
        h.transport.state.withLock { st in st.connections[quiet.id]?.lastReceived = t0 &- s(30) }

        h.transport.sweepConnections(now: t0 + s(5))
        #expect(h.count == 3)

        h.transport.sweepConnections(now: t0 + s(11))
        #expect(h.connection(pending.id) == nil && peerSeesClose(pending.peer))
        #expect(pending.link.closedBecause == "the peer was not authenticated within 10 s")
        #expect(h.connection(quiet.id) != nil)

        h.transport.sweepConnections(now: t0 + s(25))
        #expect(h.connection(quiet.id) != nil && h.connection(talking.id) != nil)

        // The talking peer sends an SDU 80 s into the quiet (its clock moved back to say so).
        h.transport.state.withLock { st in st.connections[talking.id]?.lastReceived = t0 &- s(80) }
        let sdu: [UInt8] = [1, 2, 3]
        #expect(send(talking.peer, sdu, sdu.count, Int32(MSG_NOSIGNAL)) == 3)
        try waitUntil("the SDU to reach the link") { talking.link.units == [sdu] }

        #expect(h.connection(talking.id).map { $0.lastReceived >= t0 } == true)

        h.transport.sweepConnections(now: t0 + s(59))
        #expect(h.connection(quiet.id) != nil)
        h.transport.sweepConnections(now: t0 + s(61))
        #expect(h.connection(quiet.id) == nil && peerSeesClose(quiet.peer))
        #expect(quiet.link.closedBecause == "nothing received for 90 s")
        #expect(h.connection(talking.id) != nil && !talking.link.isClosed)
    }

    /// The sweep runs by itself on the loop's timers once the transport runs.
    @Test func theSweepIsScheduled() throws {
        let h = try BLEChannelHarness { o in
            o.handshakeTimeout = 0.2
        }
        defer { h.close() }
        let run = h.transport.state.withLock { $0.run }
        h.transport.connectionTick(run: run)
        let pending = try #require(try h.accept(from: bleAddress(1)))
        try waitUntil("the unauthenticated channel to be closed by the timer", timeout: 5) { pending.link.isClosed }
        #expect(h.transport.state.withLock { $0.connectionTimer } != nil)
    }

    // MARK: - Writing

    /// A socket that cannot be registered again (the loop refuses: here it has stopped)
    /// would be watched by nothing: the channel is closed like any other, its link told.
    @Test func aChannelThatCannotBeWatchedIsClosed() throws {
        let h = try BLEChannelHarness()
        defer { h.close() }
        let unit = [UInt8](repeating: 7, count: 1000)
        // Draining: queued while the loop runs (writability watched), then the loop stops,
        // the peer reads, and giving up writability cannot be registered.
        let draining = try #require(try h.accept(from: bleAddress(1)))
        _ = fillSendBuffer(draining.fd)
        h.transport.linkSend(draining.id, unit)
        #expect(h.connection(draining.id)?.watchingWrites == true)
        // Filling: its buffer full, the first SDU queued must start watching writability.
        let filling = try #require(try h.accept(from: bleAddress(2)))
        _ = fillSendBuffer(filling.fd)

        h.opener.eventLoop.stop()
        #expect(!peerSeesClose(draining.peer))  // drained, still open
        h.transport.connectionReady(draining.id, .writable)
        #expect(h.connection(draining.id) == nil && peerSeesClose(draining.peer))
        #expect(draining.link.closedBecause?.hasPrefix("cannot watch the connection any more: ") == true)

        h.transport.linkSend(filling.id, unit)
        #expect(h.connection(filling.id) == nil && peerSeesClose(filling.peer))
        #expect(filling.link.closedBecause?.hasPrefix("cannot watch the connection any more: ") == true)
        #expect(h.transport.state.withLock { $0.closedCount } == 2)
    }

    /// SDUs queued while the kernel had no room leave together once it has: one
    /// sendmmsg(2) for the backlog, not one send(2) each (issue 20), each still one SDU, in
    /// order. (8: a Unix socket pair, standing for the channel, queues 10 messages at most.)
    @Test func aBacklogOfSDUsLeavesInOneSystemCall() throws {
        let h = try BLEChannelHarness()
        defer { h.close() }
        let c = try #require(try h.accept(from: bleAddress(1)))
        let connection = try #require(h.connection(c.id))
        let units = (0..<8).map { [UInt8](repeating: UInt8($0), count: 500) }
        let calls = h.transport.state.withLock { s -> Int in
            // The backlog as EAGAIN left it; the kernel has room again.
            for unit in units {
                connection.queue.append(unit)
                connection.queuedBytes += unit.count
            }
            let before = connection.writeCalls
            #expect(h.transport.flushLocked(&s, connection) == nil)
            #expect(connection.queue.isEmpty && connection.queuedBytes == 0 && connection.bytesOut == 8 * 500)
            return connection.writeCalls - before
        }
        #expect(calls == 1, "\(calls) system calls for \(units.count) SDUs")
        var buffer = [UInt8](repeating: 0, count: 65536)
        var received: [[UInt8]] = []
        while true {
            let n = recv(c.peer, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard n > 0 else { break }
            received.append(Array(buffer[0..<n]))
        }
        #expect(received == units)
    }

    /// The write queue's cap holds per SDU: the one that would pass it is refused (never
    /// queued, never sent) and the channel closed, its link told the peer is not reading.
    @Test func theWriteQueueNeverPassesItsCap() throws {
        let cap = Wire.maxPacketLength + 64
        let h = try BLEChannelHarness { $0.maxWriteQueueBytes = cap }
        defer { h.close() }
        let c = try #require(try h.accept(from: bleAddress(1)))
        let connection = try #require(h.connection(c.id))
        let inKernel = fillSendBuffer(c.fd)
        let unit = [UInt8](repeating: 9, count: 4000)
        var queued = 0
        for _ in 0..<100 where h.connection(c.id) != nil {
            h.transport.linkSend(c.id, unit)
            let (bytes, peak) = h.transport.state.withLock { _ in (connection.queuedBytes, connection.peakQueuedBytes) }
            #expect(bytes <= cap && peak <= cap)
            if h.connection(c.id) != nil { queued += 1 }
        }
        #expect(queued == cap / unit.count)
        #expect(h.transport.state.withLock { _ in connection.peakQueuedBytes } == queued * unit.count)
        try waitUntil("the link to be told") { c.link.isClosed }
        #expect(c.link.closedBecause?.hasPrefix("the peer is not reading (\(queued * unit.count) bytes queued") == true)
        var drained = 0
        #expect(peerSeesClose(c.peer, drained: &drained))
        #expect(drained == inKernel)  // nothing of what was queued or refused went out
    }

    @Test func newOptionsAreChecked() {
        func refused(_ adjust: (inout BLETransport.Options) -> Void) -> Bool {
            var o = BLETransport.Options()
            adjust(&o)
            return (try? BLETransport(options: o)) == nil
        }
        #expect(refused { $0.maxChannelsPerAddress = 0 })
        #expect(refused { $0.reservedOutboundSlots = $0.maxConnections })
        #expect(refused { $0.reservedOutboundSlots = -1 })
        #expect(refused { $0.idleTimeout = Double(Node.linkKeepaliveMs) / 1000 })
        #expect(refused { $0.idleTimeout = 0 })
        #expect(!refused { $0.maxConnections = 1; $0.reservedOutboundSlots = 0 })
        let defaults = BLETransport.Options()
        #expect(defaults.maxChannelsPerAddress == 2 && defaults.reservedOutboundSlots == 1)
        #expect(defaults.idleTimeout * 1000 >= 3 * Double(Node.linkKeepaliveMs) && defaults.handshakeTimeout <= 10)
    }
}
