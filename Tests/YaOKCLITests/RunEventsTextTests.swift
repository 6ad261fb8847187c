import Foundation
import Testing
@testable import yaok
import YaOK

/// `yaok run`'s text lines for a relay with a wrong pin: the disconnect once, not again as
/// the notice the relay also sends for it (before: the same sentence twice, next to the
/// security line). JSON keeps every event.
@Suite struct RunEventsTextTests {
    func printed(json: Bool) throws -> [String] {
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
        let detail = "The relay's certificate does not match the pinned key (expected 00…, got 99…)"
        printer.print(.transportConnection(name: "relay", .connecting))
        printer.print(.transportConnection(name: "relay", TransportConnection(state: .disconnected, reason: .pinMismatch,
                                                                            detail: detail, nextRetryMs: nil)))
        printer.print(.transportNotice(TransportNotice(transport: "relay", message: "Relay 127.0.0.1:1: \(detail). Retrying in 1 s.")))
        // A notice that says something else still shows.
        printer.print(.transportNotice(TransportNotice(transport: "relay", message: "Rate limit reached. Try again in 12 minutes.")))
        return lines.withLock { $0 }
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
