import Foundation
import Glibc
import Testing
@testable import yaok
import YaOK

/// A `yaok-relay` process from the same build, on 127.0.0.1, read for its pin and address.
final class RelayProcess: @unchecked Sendable {
    let process = Process()
    let data: String
    private(set) var address = ""
    private(set) var pin = ""

    init(data: String, listen: String = "127.0.0.1:0") throws {
        self.data = data
        process.executableURL = CLI.executable.deletingLastPathComponent().appendingPathComponent("yaok-relay")
        process.arguments = ["--listen", listen, "--data", data, "--self-signed"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let found = Locked<[String: String]>([:])
        DispatchQueue.global().async {
            var pending = Data()
            while true {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    for key in ["pin", "listening"] where line.hasPrefix("\(key): ") {
                        found.withLock { $0[key] = String(line.dropFirst(key.count + 2)) }
                    }
                }
            }
        }
        let deadline = Date().addingTimeInterval(30)
        while found.withLock({ $0.count }) < 2 && Date() < deadline { usleep(20_000) }
        guard let pin = found.withLock({ $0["pin"] }), let address = found.withLock({ $0["listening"] }) else {
            kill()
            throw CLIError("yaok-relay did not start")
        }
        self.pin = pin
        self.address = address
    }

    func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { kill() }
}

/// `yaok run` prints relay connects and disconnects with the reason (issue 21 §3), and
/// `yaok status` says "Internet: Available/Unavailable" (AC-060-01).
@Suite(.serialized) struct RunRelayConnectionTests {
    @Test func aWrongPinIsPrintedAsADisconnectWithThePinMismatch() throws {
        let relay = try RelayProcess(data: NSTemporaryDirectory() + "yaok-cli-relay-" + UUID().uuidString)
        defer { relay.kill(); try? FileManager.default.removeItem(atPath: relay.data) }
        let (alice, _) = try pairOfContacts("wrongpin")
        let run = try RunningPeer(alice, ["--relay", relay.address, "--relay-pin", String(repeating: "ab", count: 32)])
        let line = try #require(try run.waitFor(event: "connection", timeout: 15) { $0["state"] as? String == "disconnected" })
        #expect(line["reason"] as? String == "pin_mismatch")
        #expect((line["detail"] as? String)?.contains("pinned key") == true)
        #expect(line["next_retry_ms"] is Int)
        let status = try alice.run(["status"]).stdout
        #expect(status.contains("Connection: disconnected (pin mismatch)"), "\(status)")
        #expect(status.contains("Internet: Available"), "\(status)")  // the relay answered
        #expect(run.stop() == 0)
    }

    @Test func aRelayKilledAndRestartedIsPrintedAsDisconnectAndConnect() throws {
        let data = NSTemporaryDirectory() + "yaok-cli-relay-" + UUID().uuidString
        var relay = try RelayProcess(data: data)
        defer { relay.kill(); try? FileManager.default.removeItem(atPath: data) }
        let (alice, _) = try pairOfContacts("relaydown")
        let run = try RunningPeer(alice, ["--relay", relay.address, "--relay-pin", relay.pin])
        #expect(try run.waitFor(event: "connection", timeout: 15) { $0["state"] as? String == "connected" } != nil)
        #expect(try alice.run(["status"]).stdout.contains("Connection: connected"))

        relay.kill()
        let down = try #require(try run.waitFor(event: "connection", timeout: 15) { $0["state"] as? String == "disconnected" })
        #expect(["closed", "refused"].contains(down["reason"] as? String))
        #expect(try run.waitFor(event: "internet", timeout: 15) { $0["available"] as? Bool == false } != nil)
        let status = try alice.run(["status"]).stdout
        #expect(status.contains("Internet: Unavailable"), "\(status)")

        relay = try RelayProcess(data: data, listen: relay.address)
        func connects() -> Int { run.events.filter { $0["event"] as? String == "connection" && $0["state"] as? String == "connected" }.count }
        let deadline = Date().addingTimeInterval(60)
        while connects() < 2 && Date() < deadline { usleep(50_000) }
        #expect(connects() == 2)
        while run.events.last(where: { $0["event"] as? String == "internet" })?["available"] as? Bool != true && Date() < deadline {
            usleep(50_000)
        }
        #expect(run.events.last { $0["event"] as? String == "internet" }?["available"] as? Bool == true)
        #expect(run.stop() == 0)
    }
}
