import Foundation
import Glibc
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The built `yaok-relay` as a real process: durability across SIGKILL, a clean SIGTERM,
/// and the stats and revoke commands.
final class RelayProcessTests: XCTestCase {
    static let executable: String = {
        // The test bundle sits in the build products directory, beside the executable.
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("yaok-relay").path
    }()

    var directory = ""

    override func setUpWithError() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: Self.executable), "no \(Self.executable)")
        directory = try makeTempDirectory("relay-process")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A running relay process and what it printed.
    final class RelayProcess {
        let process = Process()
        let pin: [UInt8]
        let port: UInt16
        private let output: Pipe

        /// `launcher`: a command that runs the relay (e.g. prlimit with its options), or none.
        init(directory: String, extra: [String] = [], launcher: [String] = []) throws {
            let arguments = ["--listen", "127.0.0.1:0", "--data", directory + "/data", "--self-signed"] + extra
            if let tool = launcher.first {
                process.executableURL = URL(fileURLWithPath: tool)
                process.arguments = Array(launcher.dropFirst()) + [RelayProcessTests.executable] + arguments
            } else {
                process.executableURL = URL(fileURLWithPath: RelayProcessTests.executable)
                process.arguments = arguments
            }
            output = Pipe()
            process.standardOutput = output
            process.standardInput = FileHandle.nullDevice
            try process.run()
            var pin: [UInt8]?
            var port: UInt16?
            var buffered = ""
            let handle = output.fileHandleForReading
            let deadline = Date().addingTimeInterval(20)
            while port == nil, Date() < deadline {
                let data = handle.availableData
                if data.isEmpty { break }
                buffered += String(decoding: data, as: UTF8.self)
                for line in buffered.split(separator: "\n") {
                    if line.hasPrefix("pin: ") { pin = decodeHexString(String(line.dropFirst(5))) }
                    if line.hasPrefix("listening: "), let p = line.split(separator: ":").last { port = UInt16(p) }
                }
            }
            guard let pin, pin.count == 32, let port else {
                process.terminate()
                throw TestFailure("the relay printed no pin or port: \(buffered)")
            }
            self.pin = pin
            self.port = port
            printed = buffered
        }

        private var printed: String

        /// Everything it printed on stdout (once it has exited).
        func allOutput() -> String {
            printed + String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }

        func kill(_ signal: Int32) -> Int32 {
            Glibc.kill(process.processIdentifier, signal)
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    func run(_ arguments: [String]) throws -> (status: Int32, stdout: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.executable)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func testEveryAcceptedPacketSurvivesSIGKILL() throws {
        let first = try RelayProcess(directory: directory, extra: ["--rate-limit", "100000"])
        let box = try SigningKey.random()
        let alice = try TestClient(tlsPort: first.port, pin: first.pin)
        guard case .ready? = try alice.login() else { return XCTFail() }
        let packets = try (0..<300).map { _ in try makePacket(payloadLength: 500) }
        var accepted: [[UInt8]] = []
        // Post everything, and kill the relay the moment the first 200 ACCEPTEDs are in.
        let requests = Dictionary(uniqueKeysWithValues: packets.enumerated().map { (UInt32($0.offset + 1), $0.element) })
        for (i, p) in packets.enumerated() { try alice.send(signedPost(request: UInt32(i + 1), mailbox: mailbox(box), packet: p)) }
        while accepted.count < 200, let frame = try alice.next(timeout: 10) {
            if case .accepted(let r) = frame, let p = requests[r] { accepted.append(p) }
        }
        XCTAssertEqual(first.kill(SIGKILL), SIGKILL)
        XCTAssertEqual(accepted.count, 200)

        let second = try RelayProcess(directory: directory)
        XCTAssertEqual(second.pin, first.pin, "the same certificate across restarts")
        let bob = try TestClient(tlsPort: second.port, pin: second.pin)
        guard case .ready? = try bob.login() else { return XCTFail() }
        XCTAssertEqual(try bob.subscribe([box]), 1)
        // Everything ACCEPTED is there (and possibly some whose ACCEPTED was lost in the kill).
        let delivered = Set(try bob.delivered(300, timeout: 5).map(\.1))
        XCTAssertTrue(Set(accepted).isSubset(of: delivered), "\(Set(accepted).subtracting(delivered).count) accepted packets lost")
        XCTAssertEqual(second.kill(SIGTERM), 0, "SIGTERM: a clean exit")
    }

    func testBadListenFailsBeforeAnythingIsCreated() throws {
        func serve(_ listen: String) throws -> (status: Int32, stdout: String, stderr: String) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Self.executable)
            p.arguments = ["--listen", listen, "--data", directory + "/data", "--self-signed"]
            let out = Pipe(), err = Pipe()
            p.standardOutput = out
            p.standardError = err
            try p.run()
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
        }
        // A port in use: no pin printed, no data directory, and the reason.
        let busy = try RelayListener(host: "127.0.0.1", port: 0)
        let port = busy.port
        defer { withExtendedLifetime(busy) {} }
        let inUse = try serve("127.0.0.1:\(port)")
        XCTAssertNotEqual(inUse.status, 0)
        XCTAssertFalse(inUse.stdout.contains("pin:"), inUse.stdout)
        XCTAssertTrue(inUse.stderr.contains("port \(port) is already in use"), inUse.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/data"))
        let v6 = try serve("[::1]:7443")
        XCTAssertNotEqual(v6.status, 0)
        XCTAssertTrue(v6.stderr.contains("IPv4 only"), v6.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/data"))
        // The top-level help points to serve's options.
        XCTAssertTrue(try run(["--help"]).stdout.contains("yaok-relay serve --help"))
    }

    /// `--address-deletes-per-second` (the per-address DELETE budget a benchmark with all
    /// its clients on 127.0.0.1 lifts, RELAY.md): listed by `serve --help`, at least 1, and
    /// a relay given a value starts.
    func testAddressDeleteBudgetOption() throws {
        XCTAssertTrue(try run(["serve", "--help"]).stdout.contains("--address-deletes-per-second"))
        let zero = try run(["--listen", "127.0.0.1:0", "--data", directory + "/data", "--self-signed",
                            "--address-deletes-per-second", "0"])
        XCTAssertNotEqual(zero.status, 0)
        XCTAssertFalse(zero.stdout.contains("pin:"), zero.stdout)
        let relay = try RelayProcess(directory: directory, extra: ["--address-deletes-per-second", "1000000000"])
        XCTAssertNotEqual(relay.port, 0)
        XCTAssertEqual(relay.kill(SIGTERM), 0)
    }

    func testStatsAndRevokeCommands() throws {
        let relay = try RelayProcess(directory: directory, extra: ["--log-sessions"])
        let key = try SigningKey.random()
        let client = try TestClient(tlsPort: relay.port, pin: relay.pin)
        guard case .ready? = try client.login(key) else { return XCTFail() }
        XCTAssertEqual(try client.post(try makePacket(), to: mailbox(try SigningKey.random())), .accepted(request: 1))
        XCTAssertTrue(eventually(timeout: 5) {
            let stats = try? run(["stats", "--data", directory + "/data", "--json"])
            return stats?.stdout.contains("\"connected\":1,\"stored\":1,\"accepted\":1") == true
        })
        let revoke = try run(["revoke", "--data", directory + "/data", Hex.encode(key.publicKey)])
        XCTAssertEqual(revoke.status, 0)
        let (closed, frames) = client.waitForClose(timeout: 3)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.revoked])
        let text = try run(["stats", "--data", directory + "/data"])
        XCTAssertTrue(text.stdout.contains("revoked:           1 pseudonym"), text.stdout)
        let top = try run(["stats", "--data", directory + "/data", "--top", "5"])
        XCTAssertTrue(top.stdout.contains("\n\(Hex.encode(key.publicKey))  1"), top.stdout)
        XCTAssertEqual(relay.kill(SIGINT), 0)
        let printed = relay.allOutput()
        XCTAssertTrue(printed.contains("session \(Hex.encode(key.publicKey)) from 127.0.0.1 ready\n"), printed)
        XCTAssertTrue(printed.contains("session \(Hex.encode(key.publicKey)) from 127.0.0.1 ended: revoked"), printed)
        XCTAssertNotEqual(try run(["stats", "--data", directory + "/nothing"]).status, 0)
    }

    /// Under the common 1,024 open-files limit (soft and hard), one address that logs in
    /// as often as it can does not lock others out: before, it held every descriptor,
    /// accept() failed with EMFILE and a second address's handshake was never answered.
    func testOneAddressCannotExhaustDescriptors() throws {
        let prlimit = ["/usr/bin/prlimit", "/bin/prlimit"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let prlimit else { throw XCTSkip("no prlimit (util-linux)") }
        _ = RelayServer.raiseDescriptorLimit()  // this process holds the attacker's side
        let relay = try RelayProcess(directory: directory, launcher: [prlimit, "--nofile=1024:1024", "--"])
        var stopped = false
        defer { if !stopped { _ = relay.kill(SIGKILL) } }  // a failure must not leave it running
        var held: [TestClient] = []
        for _ in 0..<1_100 {
            guard let c = try? TestClient(tlsPort: relay.port, pin: relay.pin, from: 0x7F00_0001),
                  case .ready? = try? c.login() else { break }
            held.append(c)
        }
        XCTAssertLessThanOrEqual(held.count, 64, "one address holds at most its cap")
        let other = try TestClient(tlsPort: relay.port, pin: relay.pin, from: 0x7F00_0102)
        guard case .ready? = try other.login() else { return XCTFail("a second address is locked out") }
        held.removeAll()
        stopped = true
        XCTAssertEqual(relay.kill(SIGTERM), 0, "the relay is still running")
    }
}

func decodeHexString(_ text: String) -> [UInt8]? {
    var out: [UInt8] = []
    var chars = Array(text.utf8)[...]
    while chars.count >= 2 {
        guard let b = UInt8(String(decoding: chars.prefix(2), as: UTF8.self), radix: 16) else { return nil }
        out.append(b)
        chars = chars.dropFirst(2)
    }
    return chars.isEmpty ? out : nil
}
