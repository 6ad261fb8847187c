import Foundation
import Testing
@testable import yaok
import YaOK

/// `yaok run`'s text lines for a relay with a wrong pin: the disconnect once, not again as
/// the notice the relay also sends for it (before: the same sentence twice, next to the
/// security line). JSON keeps every event.
@Suite struct RunEventsTextTests {
    func printed(json: Bool) throws -> [String] {
        let detail = "The relay's certificate does not match the pinned key (expected 00…, got 99…)"
        return try printed(json: json, [
            .transportConnection(name: "relay", .connecting),
            .transportConnection(name: "relay", TransportConnection(state: .disconnected, reason: .pinMismatch,
                                                                    detail: detail, nextRetryMs: nil)),
            .transportNotice(TransportNotice(transport: "relay", message: "Relay 127.0.0.1:1: \(detail). Retrying in 1 s.")),
            // A notice that says something else still shows.
            .transportNotice(TransportNotice(transport: "relay", message: "Rate limit reached. Try again in 12 minutes.")),
        ])
    }

    /// The lines `yaok run` prints for `events`, from a fresh node.
    func printed(json: Bool, _ events: [NodeEvent]) throws -> [String] {
        let dir = NSTemporaryDirectory() + "yaok-cli-events-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var options = Node.Options()
        options.pinHashing = .insecureFastForTestsOnly
        options.allowTestOnlyKDFCosts = true
        let node = try Node(dataDirectory: dir, options: options)
        defer { node.close() }
        _ = try node.setup(name: "Alice", pin: "246810", confirmation: "246810")
        let lines = Locked<[String]>([])
        let printer = try EventPrinter(node: node, out: EventOutput(json: json) { line in lines.withLock { $0.append(line) } })
        for event in events { printer.print(event) }
        return lines.withLock { $0 }
    }

    /// A LAN that starts with no network says so, though it is the first thing it reports
    /// (before: `run` printed "WiFi: running (0 links)" and nothing else, on a machine with
    /// no network), and says when the network is back; a transport switched off or failed
    /// is not announced again as disconnected, and one that starts connected prints nothing.
    @Test func aTransportThatStartsWithNoNetworkSaysSo() throws {
        let noNetwork = TransportConnection(state: .disconnected, reason: .noNetwork,
                                            detail: "No network: no IPv4 interface is up (other than loopback)")
        let lines = try printed(json: false, [
            .transportConnection(name: "lan", noNetwork),
            .transportConnection(name: "lan", .connected),
            .transportConnection(name: "ble", .connected),
            .transportConnection(name: "relay", TransportConnection(state: .disconnected, reason: .disabled)),
        ])
        #expect(lines == ["lan: disconnected (no network): No network: no IPv4 interface is up (other than loopback)",
                          "lan: connected"], "\(lines)")
    }

    @Test func aWrongPinIsOneLineInText() throws {
        let lines = try printed(json: false)
        #expect(lines.filter { $0.contains("does not match the pinned key") }.count == 1, "\(lines)")
        #expect(lines.contains { $0.contains("disconnected (pin mismatch)") })
        #expect(lines.contains("Rate limit reached. Try again in 12 minutes."))
    }

    @Test func jsonKeepsTheNotice() throws {
        let lines = try printed(json: true)
        #expect(lines.filter { $0.contains("\"event\":\"notice\"") }.count == 2, "\(lines)")
    }
}
