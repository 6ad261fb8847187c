import YaOKWire
import Foundation
import Glibc
@testable import YaOKSupport
@testable import YaOKLoop
import YaOKCrypto
@testable import YaOKTransports
import YaOKNode

/// A stand-in for a node: its own event loop, and links that record what they receive.
/// With `echo`, each link sends every unit it receives straight back (from inside
/// `receive`, on the event thread, as a node's link may).
final class FakeOpener: LinkOpener, Sendable {
    let eventLoop: EventLoop
    let echo: Bool
    /// Each link takes this many units, then refuses every later one (as a node whose link
    /// was flooded or closed).
    let refuseAfter: Int?
    private let opened = Locked<[FakeLink]>([])

    init(echo: Bool = false, refuseAfter: Int? = nil) throws {
        eventLoop = try EventLoop()
        self.echo = echo
        self.refuseAfter = refuseAfter
    }

    deinit { eventLoop.stop() }

    func openLink(transport: String, as role: LinkRole, mtu: Int, stream: Bool, send: LinkSender,
                  closed: @escaping @Sendable (String) -> Void) throws -> any TransportLink {
        let link = FakeLink(role: role, mtu: mtu, echo: echo, send: send, closed: closed, loop: eventLoop, refuseAfter: refuseAfter)
        opened.withLock { $0.append(link) }
        return link
    }

    var links: [FakeLink] { opened.withLock { $0 } }
    var openLinks: [FakeLink] { links.filter { !$0.isClosed } }

    /// Waits up to `timeout` seconds for a link to be open; returns it.
    func waitForOpenLink(timeout: Double = 5) throws -> FakeLink {
        try waitFor("an open link", timeout: timeout) { self.openLinks.first }
    }
}

final class FakeLink: TransportLink, Sendable {
    let role: LinkRole
    var initiator: Bool { role == .initiator }
    let mtu: Int
    let echo: Bool
    let refuseAfter: Int?
    private let sender: LinkSender
    private let nodeClosed: @Sendable (String) -> Void
    private let loop: EventLoop
    private let received = Locked<[[UInt8]]>([])
    private let closeReason = Locked<String?>(nil)
    private let handshakeDone = Locked(false)
    private let contact = Locked<Bool?>(nil)

    init(role: LinkRole, mtu: Int, echo: Bool, send: LinkSender,
         closed: @escaping @Sendable (String) -> Void, loop: EventLoop, refuseAfter: Int? = nil) {
        self.refuseAfter = refuseAfter
        self.role = role
        self.mtu = mtu
        self.echo = echo
        sender = send
        nodeClosed = closed
        self.loop = loop
    }

    @discardableResult
    func receive(_ unit: [UInt8]) -> Bool {
        let taken = received.withLock { units -> Bool in
            if let refuseAfter, units.count >= refuseAfter { return false }
            units.append(unit)
            return true
        }
        guard taken else { return false }
        if echo { sender.send([unit]) }
        return true
    }

    func close(reason: String) {
        closeReason.withLock { if $0 == nil { $0 = reason } }
    }

    /// A fake has no handshake: a test says when it counts as done (`authenticate`).
    var isAuthenticated: Bool { handshakeDone.withLock { $0 } && !isClosed }

    func authenticate() { handshakeDone.withLock { $0 = true } }

    /// What the node would say of the authenticated peer: a contact (true), a stranger
    /// (false), or unknown (nil, the default: as a locked node).
    var peerIsContact: Bool? { isAuthenticated ? contact.withLock { $0 } : nil }

    func setContact(_ value: Bool?) { contact.withLock { $0 = value } }

    /// Sends a unit the way a node does: on the event thread.
    func send(_ unit: [UInt8]) {
        loop.post { [sender] in sender.send([unit]) }
    }

    /// Whether the transport takes this link's units on any thread (`LinkSender.anyThread`).
    var takesUnitsOnAnyThread: Bool { sender.sendsFromAnyThread }

    /// Sends units on the calling thread, as a node's flush on an app's thread does for a
    /// link that takes units on any thread.
    func sendHere(_ units: [[UInt8]]) {
        sender.send(units)
    }

    /// Sends units in one go, as a node's flush does: in one call on the event thread (one
    /// by one to a link that takes them so).
    func send(burst units: [[UInt8]]) {
        loop.post { [sender] in sender.send(units) }
    }

    /// The node ends the link (on the event thread).
    func endFromNode(_ reason: String) {
        close(reason: reason)
        loop.post { [nodeClosed] in nodeClosed(reason) }
    }

    var units: [[UInt8]] { received.withLock { $0 } }
    var isClosed: Bool { closeReason.withLock { $0 != nil } }
    var closedBecause: String? { closeReason.withLock { $0 } }
}

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Sleeps the calling thread. The tests block rather than suspend: run on the cooperative
/// pool next to other suites' blocking tests, a suspended test can wait far past its own
/// deadlines for a thread, and time-sensitive steps (connect, then check within a timeout)
/// would then fail for no fault of the code under test.
func pause(nanoseconds: UInt64) {
    usleep(UInt32(min(nanoseconds / 1000, UInt64(UInt32.max))))
}

/// Polls `probe` every 10 ms until it returns a value or `timeout` seconds pass.
@discardableResult
func waitFor<T>(_ what: String, timeout: Double = 5, _ probe: () throws -> T?) throws -> T {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if let value = try probe() { return value }
        guard Date() < deadline else { throw TimedOut(what: what) }
        pause(nanoseconds: 10_000_000)
    }
}

func waitUntil(_ what: String, timeout: Double = 5, _ condition: () throws -> Bool) throws {
    try waitFor(what, timeout: timeout) { try condition() ? true : nil }
}

/// Resident memory of this process in KiB (VmRSS in /proc/self/status).
func residentKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
    return 0
}

/// Options for a transport on 127.0.0.1, an ephemeral port, no discovery.
func loopbackOptions(_ adjust: (inout LANTransport.Options) -> Void = { _ in }) -> LANTransport.Options {
    var options = LANTransport.Options()
    options.listenAddress = "127.0.0.1"
    options.listenPort = 0
    options.discovery = nil
    adjust(&options)
    return options
}

/// A started transport on loopback with a fake node.
func startLoopback(echo: Bool = false, _ adjust: (inout LANTransport.Options) -> Void = { _ in }) throws -> (LANTransport, FakeOpener, UInt16) {
    let opener = try FakeOpener(echo: echo)
    let transport = try LANTransport(options: loopbackOptions(adjust))
    try transport.start(opener: opener)
    guard let port = transport.listeningPort else { throw TimedOut(what: "a listening port") }
    return (transport, opener, port)
}
