import Testing
@testable import YaOKSim

/// The ONE connection-event and Haggle contacts.dat importers: the fixtures read as written,
/// and a malformed line is refused with its number.
@Suite struct ImporterTests {
    @Test func oneFixture() throws {
        let plan = try ONEConnectionImporter.plan(text: Fixture.text("one-connections.txt"), bandwidth: 1000)
        #expect(plan.nodeCount == 4)
        #expect(plan.duration == 7300)
        let got = plan.encounters.map { "\($0.a)-\($0.b) \($0.start)-\($0.end)" }
        #expect(got == ["0-1 0.0-30.5", "1-2 600.0-660.0", "1-2 3600.0-3610.0", "0-1 7200.0-7300.0", "2-3 7200.0-7300.0"])
        #expect(plan.encounters[0].capacity == 30_500)
        #expect(!plan.encounters.contains { $0.a == 0 && $0.b == 2 })
    }

    @Test func haggleFixture() throws {
        let plan = try HaggleImporter.plan(text: Fixture.text("haggle-contacts.dat"), bandwidth: 1000)
        // ids 1, 2, 3, 5 become 0, 1, 2, 3.
        #expect(plan.nodeCount == 4)
        let got = plan.encounters.map { "\($0.a)-\($0.b) \($0.start)-\($0.end)" }
        // The single-scan contact gets a second; the two overlapping 2–3 contacts are one.
        #expect(got == ["0-1 121.0-122.0", "0-2 500.0-1100.0", "1-2 500.0-800.0", "1-3 3600.0-3720.0", "0-3 4000.0-4600.0"])
        #expect(plan.duration == 4600)
    }

    @Test(arguments: [
        ("0 CONN 0 1 up\n10 CONN 0 1 sideways\n", "Line 2: the state must be up or down"),
        ("0 CONN 0 1 up\nabc CONN 0 1 down\n", "Line 2: the time is not a non-negative number"),
        ("# c\n\n5 C M1 0 1 100\n", "Line 3: only CONN events are read"),
        ("0 CONN 0 1\n", "Line 1: expected"),
        ("0 CONN 0 x up\n", "Line 1: hosts must be non-negative integers"),
        ("0 CONN 2 2 up\n", "Line 1: host 2 connects to itself"),
        ("0 CONN 0 1 down\n", "Line 1: 0–1 goes down without having come up"),
        ("0 CONN 0 1 up\n1 CONN 1 0 up\n", "Line 2: 1–0 is already up"),
        ("10 CONN 0 1 up\n5 CONN 0 1 down\n", "Line 2: time goes backwards"),
        ("0 CONN 0 999999999 up\n", "Line 1: host id above"),
    ])
    func oneRefuses(_ text: String, _ expected: String) {
        #expect(refusal { try ONEConnectionImporter.plan(text: text) }?.hasPrefix(expected) == true)
    }

    @Test(arguments: [
        ("1 2 0 10\n1 2 20\n", "Line 2: expected"),
        ("1 2 10 5\n", "Line 1: the contact ends (5.0) before it starts (10.0)"),
        ("0 2 0 5\n", "Line 1: ids must be positive integers"),
        ("3 3 0 5\n", "Line 1: node 3 meets itself"),
        ("1 2 0 5 1 x\n", "Line 1: x is not a number"),
        ("1 2 -4 5\n", "Line 1: start and end must be non-negative numbers"),
        ("1 2 nan 5\n", "Line 1: start and end must be non-negative numbers"),
        ("\n# only a comment\n", "No contacts in the file"),
    ])
    func haggleRefuses(_ text: String, _ expected: String) {
        #expect(refusal { try HaggleImporter.plan(text: text) }?.hasPrefix(expected) == true)
    }

    @Test func errorQuotesTheLine() {
        let message = refusal { try ONEConnectionImporter.plan(text: "0 CONN 0 1 up\n7 CONN 0 1 maybe\n") }
        #expect(message?.contains("\"7 CONN 0 1 maybe\"") == true)
    }
}

/// The message of the SimError `body` throws, or nil if it succeeds.
func refusal<T>(_ body: () throws -> T) -> String? {
    do {
        _ = try body()
        return nil
    } catch let error as SimError {
        return error.message
    } catch {
        return "\(error)"
    }
}
