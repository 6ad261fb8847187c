import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKNode
@testable import YaOKTransports
@testable import YaOKRelayServer

/// A node with no contact has nothing to receive or send at a relay, and the relay ends a
/// session that neither subscribes nor posts (§8.3, `activityGraceSeconds`): the relay
/// transport logs in once (so a wrong pin or a relay that is down still shows), then holds
/// no session, and connects when a contact is added (issue 17 §2).
@Suite(.serialized) struct RelayIdleTests {
    /// Sessions that reached READY at the relay, per pseudonym (hex), from its session log.
    final class SessionCount: @unchecked Sendable {
        let ready = Locked([String: Int]())
        func count(_ pseudonym: [UInt8]) -> Int { ready.withLock { $0[Hex.encode(pseudonym)] ?? 0 } }
    }

    @Test func aNodeWithoutContactsIdlesUntilOneIsAdded() throws {
        let grace = 0.3
        let sessions = SessionCount()
        let relay = try LocalRelay { c in
            c.activityGraceSeconds = grace
            c.tickSeconds = 0.05
            c.sessionLog = { line in
                // "session <hex> from <address> ready"
                let words = line.split(separator: " ")
                guard words.count >= 2, words.last == "ready" else { return }
                sessions.ready.withLock { $0[String(words[1]), default: 0] += 1 }
            }
        }
        defer { relay.remove() }
        try relay.start()
        let pair = try NodesWithoutContacts()
        defer { pair.close() }
        let a = try pair.attach(pair.alice, port: relay.port, pin: relay.pin)
        let route = "127.0.0.1:\(relay.port)"
        let alicePseudonym = try pair.alice.relayPseudonym(for: route).publicKey

        try waitUntil("Alice logged in") { sessions.count(alicePseudonym) >= 1 }
        // Several grace periods: no session held, so none ended, so no reconnect (before,
        // the relay ended each after the grace and the client logged in again).
        Thread.sleep(forTimeInterval: grace * 5)
        #expect(sessions.count(alicePseudonym) == 1, "one login, no reconnects")
        #expect(relayStatus(a) == "Idle: no contacts yet")
        #expect(a.lastError == nil)
        #expect(a.diagnostics().serialized.contains("\"state\":\"idle\""))

        // A contact: Alice connects at once and subscribes to its mailbox.
        let bobID = try pair.alice.addContact(card: pair.bob.profile().text).id
        let aliceID = try pair.bob.addContact(card: pair.alice.profile().text).id
        try waitUntil("Alice connected and subscribed") {
            relayStatus(a) == "Connected" && a.diagnostics().serialized.contains("\"subscribed\":1")
        }
        #expect(sessions.count(alicePseudonym) == 2)
        // Subscribed, so the relay keeps the session past the grace period.
        Thread.sleep(forTimeInterval: grace * 3)
        #expect(relayStatus(a) == "Connected")
        #expect(sessions.count(alicePseudonym) == 2)

        // Bob (a contact now) connects, and a message goes through the relay.
        let b = try pair.attach(pair.bob, port: relay.port, pin: relay.pin)
        try waitUntil("Bob connected") { relayStatus(b) == "Connected" }
        let m = try pair.alice.send(to: bobID, text: "first contact")
        try waitUntil("delivered", timeout: 10) { try pair.alice.messageStatus(m.messageID) == .delivered }
        #expect(try pair.bob.texts(aliceID) == ["first contact"])
    }

    /// A session the relay ends for doing nothing (it should not happen with a contact: the
    /// client subscribes at READY) is no success: it does not reset the backoff, so such
    /// endings space out instead of repeating every grace period. A used one does reset it.
    @Test func aSessionThatDidNothingDoesNotResetTheBackoff() throws {
        for used in [false, true] {
            let t = try RelayTransport(address: RelayAddress("127.0.0.1:9"), pin: [UInt8](repeating: 1, count: 32),
                                       caFile: nil, options: RelayPair.fast)
            let generation = t.state.withLock { s -> UInt64 in
                s.running = true
                s.failures = 3
                s.sessionUsed = used
                s.readyAt = EventLoop.monotonicNanoseconds() &- 31_000_000_000  // lived 31 s
                return s.generation
            }
            t.fail(generation, YaOKError(.relayUnavailable, "The relay ended the session: No SUBSCRIBE or POST within 30 s of READY"))
            #expect(t.state.withLock { $0.failures } == (used ? 1 : 4), "used: \(used)")
            t.stop()
        }
    }
}

/// Two set-up nodes that are not (yet) contacts of each other.
final class NodesWithoutContacts {
    let dirA = NSTemporaryDirectory() + "yaok-idle-" + UUID().uuidString + "-a"
    let dirB = NSTemporaryDirectory() + "yaok-idle-" + UUID().uuidString + "-b"
    let alice: Node, bob: Node

    init() throws {
        var options = Node.Options()
        options.pinHashing = .insecureFastForTestsOnly
        options.allowTestOnlyKDFCosts = true
        alice = try Node(dataDirectory: dirA, options: options)
        bob = try Node(dataDirectory: dirB, options: options)
        _ = try alice.setup(name: "Alice", pin: "246810", confirmation: "246810")
        _ = try bob.setup(name: "Bob", pin: "246810", confirmation: "246810")
    }

    @discardableResult
    func attach(_ node: Node, port: UInt16, pin: [UInt8]) throws -> RelayTransport {
        let t = try RelayTransport(address: RelayAddress("127.0.0.1:\(port)"), pin: pin, caFile: nil, options: RelayPair.fast)
        try node.addTransport(t)
        try node.setTransport("relay", enabled: true)
        return t
    }

    func close() {
        alice.close()
        bob.close()
        try? FileManager.default.removeItem(atPath: dirA)
        try? FileManager.default.removeItem(atPath: dirB)
    }
}
