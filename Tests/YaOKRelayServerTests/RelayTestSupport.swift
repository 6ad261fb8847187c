import Foundation
import Glibc
import XCTest
import CLinux
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A fresh private directory under the system temp dir, removed by the caller's teardown.
func makeTempDirectory(_ name: String = "relay") throws -> String {
    let path = NSTemporaryDirectory() + "yaok-\(name)-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A valid routed packet (§4.2) created now, with `lifetimeMinutes` and a random payload:
/// the relay parses only the header.
func makePacket(type: PacketType = .message, id: MessageID = .random(), createdMs: Int64 = Clock.milliseconds(),
                lifetimeMinutes: UInt16 = 60, payloadLength: Int = 100) throws -> [UInt8] {
    let header = try RoutedHeader(type: type, hopLimit: 7, messageID: id, createdMs: createdMs,
                                  lifetimeMinutes: lifetimeMinutes, routingTag: RoutingTag(value: UInt64.random(in: 0...UInt64.max)))
    return try Packet.routed(header, payload: Sodium.randomBytes(payloadLength)).encode()
}

func messageID(of packet: [UInt8]) throws -> MessageID {
    try RoutedHeader.parse(packet).header.messageID
}

/// The mailbox ID of `key`, remembered with its key so that posts to it can be signed.
func mailbox(_ key: SigningKey) -> MailboxID {
    let id = try! MailboxID(bytes: key.publicKey)
    mailboxKeys.withLock { $0[id] = key }
    return id
}

/// Keys of the mailboxes tests made (`mailbox(_:)`): a POST carries the mailbox key's
/// signature (§8.3), and the tests name mailboxes by ID.
let mailboxKeys = Locked<[MailboxID: SigningKey]>([:])

/// A POST of `packet` to `box`, signed with the box's key (a signature of zeros for a box
/// the tests made no key for: the relay ends such a session).
func signedPost(request: UInt32, mailbox box: MailboxID, packet: [UInt8]) -> RelayFrame {
    let signature = mailboxKeys.withLock { $0[box] }?.sign(RelaySignedData.post(packet: packet))
    return .post(request: request, mailbox: box, signature: signature ?? [UInt8](repeating: 0, count: 64), packet: packet)
}

/// Configuration for tests: fast ticks and maintenance.
/// The relays a test case starts, stopped and removed after each test.
class RelayTestCase: XCTestCase {
    var relays: [TestRelay] = []
    var backend: StoreBackend { .sqlite }

    override func tearDown() {
        for r in relays {
            r.stop()
            try? FileManager.default.removeItem(atPath: r.directory)
        }
        relays = []
    }

    /// A relay with the tests' configuration, changed by `configure`, over `backend`.
    func startRelay(_ configure: (inout RelayConfiguration) -> Void = { _ in }) throws -> TestRelay {
        var c = testConfiguration()
        configure(&c)
        return kept(try TestRelay(configuration: c, backend: backend))
    }

    /// `relay`, stopped and removed after the test.
    func kept(_ relay: TestRelay) -> TestRelay {
        relays.append(relay)
        return relay
    }
}

func testConfiguration() -> RelayConfiguration {
    var c = RelayConfiguration()
    c.tickSeconds = 0.05
    c.maintenanceSeconds = 0.2
    c.sweepSeconds = 0.5
    return c
}

extension RelayServer {
    /// `storedBytes` read on the server's loop, which writes it: read from the test's thread
    /// it is a data race (ThreadSanitizer says so). nil: the loop did not answer in 5 s.
    var storedBytesOnLoop: Int? { onLoop { [self] in storedBytes } }
}

/// A relay on 127.0.0.1, port 0, over a fresh data directory (SQLite) or database
/// (PostgreSQL; `conninfo` given: another relay over the same one).
final class TestRelay {
    let directory: String
    let backend: StoreBackend
    let conninfo: String?
    let server: RelayServer
    var port: UInt16 { server.port }

    init(configuration: RelayConfiguration = testConfiguration(), security: RelaySecurity = .plaintextForTesting,
         directory: String? = nil, backend: StoreBackend = .sqlite, conninfo: String? = nil, carry: Bool = false) throws {
        self.directory = try directory ?? makeTempDirectory()
        self.backend = backend
        self.conninfo = backend == .postgres ? try conninfo ?? TestPostgres.freshDatabase() : nil
        let store = try openStore(backend, directory: self.directory, conninfo: self.conninfo)
        // The carry store (§12.9) when asked for: of the same backend, as yaok-relay serve opens it.
        let storage = carry ? try (backend == .postgres ? RelayCarryStorage.postgres(conninfo: self.conninfo ?? "")
                                                        : RelayCarryStorage.sqlite(directory: self.directory)) : nil
        server = try RelayServer(configuration: configuration, store: store, security: security, host: "127.0.0.1", port: 0,
                                 carry: storage)
    }

    func stop() { server.stop() }

    /// Revokes as `yaok-relay revoke` does: through a second connection to the database.
    func revoke(_ pseudonym: [UInt8]) throws {
        let store = try openStore(backend, directory: directory, conninfo: conninfo)
        defer { store.close() }
        try store.revoke(pseudonym: pseudonym, nowMs: Clock.milliseconds())
    }
}

/// The byte stream under a test client: plain TCP or TLS.
protocol TestTransport: AnyObject {
    /// nil: would block.
    func read() throws -> [UInt8]?
    /// Bytes written (0: would block).
    func write(_ bytes: ArraySlice<UInt8>) throws -> Int
    func binding() throws -> [UInt8]
}

final class PlainTestTransport: TestTransport {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }

    func read() throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { return Array(buffer[0..<n]) }
        if n == 0 { throw TestFailure("closed") }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return nil }
        throw TestFailure("recv: \(String(cString: strerror(errno)))")
    }

    func write(_ bytes: ArraySlice<UInt8>) throws -> Int {
        let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n >= 0 { return n }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return 0 }
        throw TestFailure("send: \(String(cString: strerror(errno)))")
    }

    func binding() throws -> [UInt8] { PlainChannel.testBinding }
}

/// Opens a non-blocking TCP connection to 127.0.0.1:`port` (waits for it to complete),
/// from the loopback address `from` if given (any of 127.0.0.0/8: many client addresses).
func connectLoopback(port: UInt16, blocking: Bool = false, from: UInt32? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
    if let from {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr = in_addr(s_addr: from.bigEndian)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw TestFailure("bind: \(message)")
        }
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr = in_addr(s_addr: UInt32(0x7f00_0001).bigEndian)
    let rc = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard rc == 0 else {
        let message = String(cString: strerror(errno))
        close(fd)
        throw TestFailure("connect: \(message)")
    }
    if !blocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    return fd
}

/// A relay client for tests: frames over a transport, with helpers for the session.
final class TestClient: @unchecked Sendable {  // one thread at a time
    let fd: Int32
    let transport: TestTransport
    private var decoder = try! FrameDecoder(maxLength: RelayFrame.maxLength)
    private var inbox: [RelayFrame] = []
    private(set) var nonce: [UInt8] = []
    /// The relay identifier its CHALLENGE stated (§8.2).
    private(set) var relayIdentifier: [UInt8] = []
    var pseudonym: SigningKey?
    private var nextRequest: UInt32 = 1

    /// Plain TCP (the relay must run `.plaintextForTesting`); reads the CHALLENGE.
    convenience init(port: UInt16, from: UInt32? = nil) throws {
        let fd = try connectLoopback(port: port, from: from)
        try self.init(fd: fd, transport: PlainTestTransport(fd: fd))
    }

    init(fd: Int32, transport: TestTransport, readChallenge: Bool = true) throws {
        self.fd = fd
        self.transport = transport
        if readChallenge {
            guard case .challenge(let n, let relay)? = try next() else { throw TestFailure("no CHALLENGE") }
            nonce = n
            relayIdentifier = relay
        }
    }

    deinit { close(fd) }

    func send(_ frame: RelayFrame) throws { try sendRaw(Frame.encode(frame.encode(), maxLength: RelayFrame.maxLength)) }

    func sendRaw(_ bytes: [UInt8]) throws {
        var offset = 0
        let deadline = Date().addingTimeInterval(10)
        while offset < bytes.count {
            let n = try transport.write(bytes[offset...])
            offset += n
            if n == 0 {
                guard Date() < deadline else { throw TestFailure("send timed out") }
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 100)
            }
        }
    }

    /// The next frame, or nil after `timeout` seconds. Throws when the connection closes.
    func next(timeout: Double = 5) throws -> RelayFrame? {
        let deadline = Date().addingTimeInterval(timeout)
        while inbox.isEmpty {
            if let bytes = try transport.read() {
                for payload in try decoder.feed(bytes) { inbox.append(try RelayFrame.decode(payload)) }
                continue
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32(max(1, min(left, 0.2) * 1000)))
        }
        return inbox.removeFirst()
    }

    /// Frames until one matches (the others are kept in order and returned too).
    func next(where match: (RelayFrame) -> Bool, timeout: Double = 5) throws -> (RelayFrame, skipped: [RelayFrame]) {
        var skipped: [RelayFrame] = []
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            guard let frame = try next(timeout: max(0.01, deadline.timeIntervalSinceNow)) else {
                throw TestFailure("no matching frame within \(timeout) s; got \(skipped.count) others")
            }
            if match(frame) { return (frame, skipped) }
            skipped.append(frame)
        }
    }

    /// Logs in with `key` (fresh if nil) and returns the relay's answer.
    @discardableResult
    func login(_ key: SigningKey? = nil, binding: [UInt8]? = nil) throws -> RelayFrame? {
        let key = try key ?? SigningKey.random()
        pseudonym = key
        let signature = key.sign(RelaySignedData.auth(nonce: nonce, binding: try binding ?? transport.binding()))
        try send(.auth(pseudonym: key.publicKey, signature: signature))
        return try next()
    }

    func subscribeFrame(_ keys: [SigningKey], binding: [UInt8]? = nil) throws -> RelayFrame {
        let signed = RelaySignedData.subscribe(nonce: nonce, binding: try binding ?? transport.binding(),
                                               pseudonym: pseudonym!.publicKey)
        return .subscribe(try keys.map { try MailboxProof(mailbox: mailbox($0), signature: $0.sign(signed)) })
    }

    /// Subscribes and returns SUBSCRIBED's count (DELIVERs before it are kept).
    func subscribe(_ keys: [SigningKey]) throws -> Int {
        try send(subscribeFrame(keys))
        let (frame, skipped) = try next(where: { if case .subscribed = $0 { return true } else { return false } })
        inbox.insert(contentsOf: skipped, at: 0)
        guard case .subscribed(let count) = frame else { return -1 }
        return Int(count)
    }

    /// Posts and waits for this request's ACCEPTED or ERROR (other frames are kept).
    func post(_ packet: [UInt8], to box: MailboxID, timeout: Double = 10) throws -> RelayFrame {
        let request = nextRequest
        nextRequest += 1
        try send(signedPost(request: request, mailbox: box, packet: packet))
        let (frame, skipped) = try next(where: { f in
            switch f {
            case .accepted(let r): return r == request
            case .error(let e): return e.request == request || e.request == 0
            default: return false
            }
        }, timeout: timeout)
        inbox.insert(contentsOf: skipped, at: 0)
        return frame
    }

    /// Posts several without waiting, then collects their answers by request number.
    func postMany(_ posts: [([UInt8], MailboxID)], timeout: Double = 20) throws -> [UInt32: RelayFrame] {
        var requests: [UInt32] = []
        for (packet, box) in posts {
            requests.append(nextRequest)
            try send(signedPost(request: nextRequest, mailbox: box, packet: packet))
            nextRequest += 1
        }
        var answers: [UInt32: RelayFrame] = [:]
        var kept: [RelayFrame] = []
        let deadline = Date().addingTimeInterval(timeout)
        while answers.count < requests.count {
            guard let f = try next(timeout: max(0.01, deadline.timeIntervalSinceNow)) else {
                throw TestFailure("\(answers.count) of \(requests.count) answers")
            }
            switch f {
            case .accepted(let r): answers[r] = f
            case .error(let e) where e.request != 0: answers[e.request] = f
            default: kept.append(f)
            }
        }
        inbox.insert(contentsOf: kept, at: 0)
        return answers
    }

    /// DELIVERed packets until `count` have come (or the timeout).
    func delivered(_ count: Int, timeout: Double = 10) throws -> [(MailboxID, [UInt8])] {
        var out: [(MailboxID, [UInt8])] = []
        var kept: [RelayFrame] = []
        let deadline = Date().addingTimeInterval(timeout)
        while out.count < count, let f = try next(timeout: max(0.01, deadline.timeIntervalSinceNow)) {
            if case .deliver(let m, let p) = f { out.append((m, p)) } else { kept.append(f) }
        }
        inbox.insert(contentsOf: kept, at: 0)
        return out
    }

    /// Whether the relay closes the connection within `timeout`; frames before it are returned.
    func waitForClose(timeout: Double = 5) -> (closed: Bool, frames: [RelayFrame]) {
        var frames: [RelayFrame] = []
        let deadline = Date().addingTimeInterval(timeout)
        do {
            while deadline.timeIntervalSinceNow > 0 {
                if let f = try next(timeout: deadline.timeIntervalSinceNow) { frames.append(f) }
            }
        } catch {
            return (true, frames)
        }
        return (false, frames)
    }
}

/// The resident set size of this process, in bytes (/proc/self/status VmRSS).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let digits = line.filter(\.isNumber)
        return (Int(digits) ?? 0) * 1024
    }
    return 0
}

/// Heap bytes in use in this process: unlike RSS, it counts neither freed memory malloc
/// keeps nor a sanitizer's shadow memory, so a structure's cost shows to the byte, and the
/// same in a plain build and under ThreadSanitizer. glibc's mallinfo2: `uordblks`, and
/// `hblkhd` for the large blocks it maps on their own; under a sanitizer, whose allocator
/// replaces glibc's (mallinfo2 then stays at 0), its own count.
func heapBytesInUse() -> Int {
    if let sanitizerAllocatedBytes { return sanitizerAllocatedBytes() }
    let info = mallinfo2()
    return Int(info.uordblks + info.hblkhd)
}

/// `__sanitizer_get_current_allocated_bytes` when a sanitizer's allocator runs this process
/// (Swift has no compile-time test for a sanitizer; the symbol is there or not).
nonisolated(unsafe) let sanitizerAllocatedBytes: (@convention(c) () -> Int)? =
    dlsym(nil, "__sanitizer_get_current_allocated_bytes").map { unsafeBitCast($0, to: (@convention(c) () -> Int).self) }

/// Polls `condition` until true or `timeout` seconds.
func eventually(timeout: Double = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

/// The codes of the session ERRORs (request 0) among `frames`.
func sessionErrors(_ frames: [RelayFrame]) -> [RelayErrorFrame.Code] {
    frames.compactMap { if case .error(let e) = $0, e.request == 0 { return e.code } else { return nil } }
}
