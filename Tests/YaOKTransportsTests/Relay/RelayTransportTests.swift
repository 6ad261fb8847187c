import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode
@testable import YaOKTLS
@testable import YaOKTransports
@testable import YaOKRelayServer

/// A relay server in this process (TLS, self-signed) on 127.0.0.1.
final class LocalRelay {
    let directory = NSTemporaryDirectory() + "yaok-relay-" + UUID().uuidString
    let context: TLSContext
    var server: RelayServer?
    var store: SQLiteRelayStore?
    var configuration = RelayConfiguration()
    /// Whether it carries (§12.9), its carry store in `directory/carry`.
    var carry = false
    private(set) var port: UInt16 = 0

    init(configure: (inout RelayConfiguration) -> Void = { _ in }) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        context = try TLSContext.selfSigned(directory: directory)
        configure(&configuration)
    }

    var pin: [UInt8] { context.certificatePin ?? [] }

    func start(port: UInt16 = 0) throws {
        let store = try SQLiteRelayStore(directory: directory)
        self.store = store
        server = try RelayServer(configuration: configuration, store: store, security: .tls(context), host: "127.0.0.1", port: port,
                                 carry: carry ? try RelayCarryStorage.sqlite(directory: directory) : nil)
        self.port = server?.port ?? 0
    }

    func stop() {
        server?.stop()
        server = nil
        store?.close()
        store = nil
    }

    func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Two nodes, contacts of each other, each with a relay transport (fast backoff).
final class RelayPair {
    let dirA = NSTemporaryDirectory() + "yaok-rp-" + UUID().uuidString + "-a"
    let dirB = NSTemporaryDirectory() + "yaok-rp-" + UUID().uuidString + "-b"
    let alice: Node, bob: Node
    let bobID: Int64, aliceID: Int64

    init() throws {
        var options = Node.Options()
        options.pinHashing = .insecureFastForTestsOnly
        options.allowTestOnlyKDFCosts = true
        alice = try Node(dataDirectory: dirA, options: options)
        bob = try Node(dataDirectory: dirB, options: options)
        _ = try alice.setup(name: "Alice", pin: "246810", confirmation: "246810")
        _ = try bob.setup(name: "Bob", pin: "246810", confirmation: "246810")
        bobID = try alice.addContact(card: bob.profile().text).id
        aliceID = try bob.addContact(card: alice.profile().text).id
    }

    static var fast: RelayTransport.Options {
        var o = RelayTransport.Options()
        o.minBackoff = 0.1
        o.maxBackoff = 0.4
        o.connectTimeout = 3
        return o
    }

    @discardableResult
    func attach(_ node: Node, port: UInt16, pin: [UInt8], host: String = "127.0.0.1") throws -> RelayTransport {
        let t = try RelayTransport(address: RelayAddress("\(host):\(port)"), pin: pin, caFile: nil, options: Self.fast)
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

func relayStatus(_ t: RelayTransport) -> String { t.status }

@Suite(.serialized) struct RelayTransportTests {
    @Test func offlineDeliveryThroughTheRelay() throws {
        let relay = try LocalRelay()
        defer { relay.remove() }
        try relay.start()
        let pair = try RelayPair()
        defer { pair.close() }
        let a = try pair.attach(pair.alice, port: relay.port, pin: relay.pin)
        try waitUntil("Alice connected") { relayStatus(a) == "Connected" }
        let ids = try (1...20).map { try pair.alice.send(to: pair.bobID, text: "via relay \($0)").messageID }
        try waitUntil("stored by the relay") { try ids.allSatisfy { try pair.alice.messageStatus($0) == .sent } }
        try pair.attach(pair.bob, port: relay.port, pin: relay.pin)
        try waitUntil("delivered", timeout: 10) { try ids.allSatisfy { try pair.alice.messageStatus($0) == .delivered } }
        #expect(try pair.bob.texts(pair.aliceID) == (1...20).map { "via relay \($0)" })
        let d = try pair.alice.diagnostics().serialized
        #expect(d.contains("\"status\":\"Connected\"") && d.contains("\"last_sync_ms\""))
    }

    /// §8.2: mailboxes derive from the identifier the relay states, not from the address
    /// each contact typed: Alice dials 127.0.0.1 and Bob localhost, and they still meet.
    @Test func contactsMeetWhateverAddressEachDialled() throws {
        let relay = try LocalRelay()
        defer { relay.remove() }
        try relay.start()
        let pair = try RelayPair()
        defer { pair.close() }
        let a = try pair.attach(pair.alice, port: relay.port, pin: relay.pin)
        let b = try pair.attach(pair.bob, port: relay.port, pin: relay.pin, host: "localhost")
        try waitUntil("both connected") { relayStatus(a) == "Connected" && relayStatus(b) == "Connected" }
        let m = try pair.alice.send(to: pair.bobID, text: "same relay, other name")
        try waitUntil("delivered", timeout: 10) { try pair.alice.messageStatus(m.messageID) == .delivered }
        #expect(try pair.bob.texts(pair.aliceID) == ["same relay, other name"])
        let id = Hex.encode(try #require(relay.server?.relayIdentifier))
        #expect(a.diagnostics().serialized.contains("\"relay_id\":\"\(id)\""))
        #expect(b.diagnostics().serialized.contains("\"relay_id\":\"\(id)\""))
        // One configured relay per node here: nothing shares its identifier (§8.4).
        #expect(a.diagnostics().serialized.contains("\"relay_id_shared_with\":[]"))
    }

    @Test func aRelayThatIsDownIsRetriedUntilItComesBack() throws {
        let relay = try LocalRelay()
        defer { relay.remove() }
        try relay.start()
        let port = relay.port
        relay.stop()  // the port is known, nothing listens
        let pair = try RelayPair()
        defer { pair.close() }
        let a = try pair.attach(pair.alice, port: port, pin: relay.pin)
        let m = try pair.alice.send(to: pair.bobID, text: "while the relay is down")
        try waitUntil("a retry is announced") { relayStatus(a).hasPrefix("Disconnected:") && relayStatus(a).contains("Retrying in") }
        #expect(try pair.alice.messageStatus(m.messageID) == .pending)
        #expect(try pair.alice.outbox().first?.waitingForTransport == true)
        try relay.start(port: port)
        try waitUntil("reconnected and stored", timeout: 10) { try pair.alice.messageStatus(m.messageID) == .sent }
        #expect(relayStatus(a) == "Connected")
    }

    @Test func aLockEndsTheSessionAndAnUnlockStartsANewOne() throws {
        let relay = try LocalRelay()
        defer { relay.remove() }
        try relay.start()
        let pair = try RelayPair()
        defer { pair.close() }
        let b = try pair.attach(pair.bob, port: relay.port, pin: relay.pin)
        try waitUntil("connected") { relayStatus(b) == "Connected" }
        try pair.bob.lock()
        try waitUntil("the session ends on lock") { relayStatus(b).hasPrefix("Locked") }
        try waitUntil("the relay sees no client") { relay.server?.statistics.connected == 0 }
        // Messages sent meanwhile wait at the relay and arrive after the unlock. Sent while
        // Alice's session opens: a send released while that session's pump read it was
        // once passed over for good (UnsyncedSendTests covers that window deterministically).
        try pair.attach(pair.alice, port: relay.port, pin: relay.pin)
        let m = try pair.alice.send(to: pair.bobID, text: "while Bob was locked")
        try waitUntil("stored", timeout: 20) { try pair.alice.messageStatus(m.messageID) == .sent }
        try pair.bob.unlock(pin: "246810")
        try waitUntil("delivered after the unlock", timeout: 20) { try pair.alice.messageStatus(m.messageID) == .delivered }
        #expect(relayStatus(b) == "Connected")
    }

    @Test func sessionsThatExpireLoseNothing() throws {
        let relay = try LocalRelay { $0.sessionLifetimeSeconds = 0.5 }
        defer { relay.remove() }
        try relay.start()
        let pair = try RelayPair()
        defer { pair.close() }
        try pair.attach(pair.alice, port: relay.port, pin: relay.pin)
        try pair.attach(pair.bob, port: relay.port, pin: relay.pin)
        var ids: [MessageID] = []
        for i in 1...30 {
            ids.append(try pair.alice.send(to: pair.bobID, text: "across sessions \(i)").messageID)
            Thread.sleep(forTimeInterval: 0.05)
        }
        try waitUntil("all delivered", timeout: 20) { try ids.allSatisfy { try pair.alice.messageStatus($0) == .delivered } }
        #expect(try pair.bob.texts(pair.aliceID) == (1...30).map { "across sessions \($0)" })
    }

    @Test func aWrongPinIsRefusedWithASecurityEvent() throws {
        let relay = try LocalRelay()
        defer { relay.remove() }
        try relay.start()
        let pair = try RelayPair()
        defer { pair.close() }
        let a = try pair.attach(pair.alice, port: relay.port, pin: [UInt8](repeating: 7, count: 32))
        try waitUntil("refused") { (a.lastError ?? "").contains("does not match the pinned key") }
        try waitUntil("a security event") { try pair.alice.securityEvents().contains { $0.kind == .tlsFailure } }
        #expect(relay.server?.statistics.accepted == 0)
    }

    @Test func aRevokedPseudonymStopsTrying() throws {
        let relay = try LocalRelay()
        defer { relay.remove() }
        try relay.start()
        let pair = try RelayPair()
        defer { pair.close() }
        let a = try pair.attach(pair.alice, port: relay.port, pin: relay.pin)
        try waitUntil("connected") { relayStatus(a) == "Connected" }
        let pseudonym = try pair.alice.relayPseudonym(for: "127.0.0.1:\(relay.port)").publicKey
        // As `yaok-relay revoke` does: another connection to the relay's database.
        let operatorStore = try SQLiteRelayStore(directory: relay.directory)
        try operatorStore.revoke(pseudonym: pseudonym, nowMs: Clock.milliseconds())
        operatorStore.close()
        try waitUntil("revoked", timeout: 10) { relayStatus(a).hasPrefix("Revoked") }
        Thread.sleep(forTimeInterval: 0.5)
        #expect(relayStatus(a).hasPrefix("Revoked"))  // no retry loop
    }

    @Test func aServerThatIsNotTLSIsRefusedAndRetried() throws {
        // A listener that answers garbage: the handshake fails, nothing crashes, it retries.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        listen(fd, 8)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        let port = UInt16(bigEndian: addr.sin_port)
        let served = Locked(0)
        let thread = Thread {
            for _ in 0..<3 {
                let c = accept(fd, nil, nil)
                guard c >= 0 else { return }
                _ = "HTTP/1.1 400 Bad Request\r\n\r\n".withCString { write(c, $0, strlen($0)) }
                close(c)
                served.withLock { $0 += 1 }
            }
        }
        thread.start()
        let pair = try RelayPair()
        defer { pair.close() }
        let a = try pair.attach(pair.alice, port: port, pin: [UInt8](repeating: 1, count: 32))
        try waitUntil("retried", timeout: 10) { served.withLock { $0 } >= 2 }
        #expect(relayStatus(a).hasPrefix("Disconnected:") || relayStatus(a) == "Connecting…")
        shutdown(fd, Int32(SHUT_RDWR))
    }
}
