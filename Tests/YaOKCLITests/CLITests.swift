import Foundation
import Testing

/// Runs the real `yaok` executable as a subprocess, the way a script would.
struct CLI {
    let home: String
    var pin = "123456"
    /// Set by `temporary`: removes the home once the last copy of this CLI (the test's, a
    /// `RunningPeer`'s) is gone, so that test runs leave no homes behind in /tmp.
    private var owned: TemporaryHome?

    init(home: String, pin: String = "123456") {
        self.home = home
        self.pin = pin
    }

    /// Removes its directory when released (shared by the copies of one `CLI`).
    final class TemporaryHome: Sendable {
        let path: String
        init(_ path: String) { self.path = path }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    static let executable: URL = {
        // The test bundle sits in the same build products directory as the executable.
        let exe = URL(fileURLWithPath: try! FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        return exe.deletingLastPathComponent().appendingPathComponent("yaok")
    }()

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
    }

    @discardableResult
    func run(_ arguments: [String], pin: String? = nil, environment extra: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = ["--home", home] + arguments
        var env = ProcessInfo.processInfo.environment
        env["YAOK_PIN"] = pin ?? self.pin
        env.merge(extra) { $1 }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Runs the CLI on a terminal of its own (`script` allocates a pty), without $YAOK_PIN, and
    /// types each reply once its prompt has appeared (the CLI flushes pending input when it
    /// turns echo off, so a reply typed early would be lost). Returns everything the terminal
    /// showed.
    func runOnTerminal(_ arguments: [String], replies: [(prompt: String, text: String)]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        let command = ([CLI.executable.path, "--home", home] + arguments).map { "'\($0)'" }.joined(separator: " ")
        process.arguments = ["-qec", command, "/dev/null"]
        var env = ProcessInfo.processInfo.environment
        env["YAOK_PIN"] = nil
        process.environment = env
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // Read on a thread of its own, so that a prompt that never comes ends the wait
        // instead of blocking it.
        final class Screen: @unchecked Sendable {  // guarded by `lock`
            let lock = NSLock()
            var text = ""
            func withLock<T>(_ body: (inout String) -> T) -> T { lock.lock(); defer { lock.unlock() }; return body(&text) }
        }
        let shown = Screen()
        let reader = Thread {
            while true {
                let data = output.fileHandleForReading.availableData
                if data.isEmpty { return }
                shown.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
        }
        reader.start()
        var answered: [String: Int] = [:]
        for reply in replies {
            let wanted = (answered[reply.prompt] ?? 0) + 1
            // A guard against a prompt that never comes, not a measure of speed.
            let deadline = Date().addingTimeInterval(15)
            while shown.withLock({ $0.components(separatedBy: reply.prompt).count - 1 }) < wanted, Date() < deadline {
                usleep(20_000)
            }
            answered[reply.prompt] = wanted
            input.fileHandleForWriting.write(Data((reply.text + "\n").utf8))
        }
        try input.fileHandleForWriting.close()
        let end = Date().addingTimeInterval(30)
        while process.isRunning, Date() < end { usleep(20_000) }
        if process.isRunning { process.terminate() }  // script hangs up its terminal: the CLI ends too
        process.waitUntilExit()
        usleep(100_000)
        return shown.withLock { $0 }
    }

    static func temporary(_ name: String) -> CLI {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("yaok-cli-\(name)-\(UUID().uuidString)")
        var cli = CLI(home: dir.path)
        cli.owned = TemporaryHome(dir.path)
        return cli
    }
}

@Suite(.serialized) struct CLITests {
    @Test func initCardAddListShowVerifyRenameDelete() throws {
        let alice = CLI.temporary("alice"), bob = CLI.temporary("bob")
        #expect(try alice.run(["init", "--name", "Alice"]).status == 0)
        #expect(try bob.run(["init", "--name", "Bob"]).status == 0)

        let card = try #require(try bob.run(["card", "--json"]).json as? [String: Any])["card"] as? String
        let cardText = try #require(card)
        #expect(cardText.hasPrefix("yaok:2:"))  // the node shows a version 2 card (§13.4)
        let human = try bob.run(["card"]).stdout
        #expect(human.contains("█") && human.contains(cardText))
        #expect(!(try bob.run(["card", "--no-qr"]).stdout.contains("█")))

        let preview = try #require(try alice.run(["contacts", "add", cardText, "--preview", "--json"]).json as? [String: Any])
        #expect(preview["name"] as? String == "Bob")
        #expect((try alice.run(["contacts", "list", "--json"]).json as? [Any])?.isEmpty == true)

        let added = try alice.run(["contacts", "add", cardText, "--json"])
        #expect(added.status == 0)
        let again = try alice.run(["contacts", "add", cardText])
        #expect(again.status != 0)
        #expect(again.stderr.contains("Bob is already in your contacts"))

        let list = try #require(try alice.run(["contacts", "--json"]).json as? [[String: Any]])
        #expect(list.count == 1)
        let fingerprint = try #require(list.first?["fingerprint"] as? String)

        let shown = try #require(try alice.run(["contacts", "show", String(fingerprint.prefix(8)), "--json"]).json as? [String: Any])
        #expect(shown["name"] as? String == "Bob")
        #expect(shown["verified"] as? Bool == false)
        #expect(try alice.run(["contacts", "verify", "bob"]).status == 0)
        #expect((try alice.run(["contacts", "show", "Bob", "--json"]).json as? [String: Any])?["verified"] as? Bool == true)

        #expect(try alice.run(["contacts", "rename", "Bob", "Robert"]).status == 0)
        #expect(try alice.run(["contacts", "show", "Robert"]).stdout.contains("Robert"))
        #expect(try alice.run(["contacts", "rename", "Robert", "R"]).stderr.contains("Name must be 2-50 characters"))

        #expect(try alice.run(["contacts", "delete", "Robert"]).status == 0)
        #expect((try alice.run(["contacts", "list", "--json"]).json as? [Any])?.isEmpty == true)
        let missing = try alice.run(["contacts", "show", "Robert"])
        #expect(missing.status != 0)
    }

    @Test func invalidInputGivesTheLibraryMessage() throws {
        let cli = CLI.temporary("invalid")
        #expect(try cli.run(["init", "--name", "A"]).stderr.contains("Name must be 2-50 characters"))
        #expect(try cli.run(["init", "--name", "Alice"], pin: "123").stderr.contains("PIN must be at least 6 digits"))
        let mismatch = try cli.run(["init", "--name", "Alice"], environment: ["YAOK_PIN_CONFIRM": "654321"])
        #expect(mismatch.stderr.contains("PINs do not match"))
        #expect(try cli.run(["status", "--json"]).stdout.contains("\"initialized\":false"))
        let created = try cli.run(["init", "--name", "Alice"])
        #expect(created.status == 0)
        #expect(created.stdout.contains("PIN strength weak"))
        // The vault's costs: the production ones, as the CLI has no test-only switch.
        #expect(try cli.run(["status"]).stdout.contains("PIN hashing: Argon2id, 2 passes, 64 MiB"))
        #expect(try cli.run(["status", "--json"]).stdout.contains("\"meets_production_minimum\":true"))
        let bad = try cli.run(["contacts", "add", "https://example.com", "--json"])
        #expect(bad.status != 0)
        #expect((bad.json as? [String: Any])?["error"] as? String == "Invalid Ya OK QR code: not a Ya OK card (Ya OK card text starts with yaok:1: or yaok:2:)")
        // A file that is not there is said to be missing, not a bad card (issue 21 §4).
        let missing = try cli.run(["contacts", "add", "cards/bob.png"])
        #expect(missing.status != 0 && missing.stderr.contains("No such file: cards/bob.png"), "\(missing.stderr)")
    }

    /// The homes the tests make in /tmp go when the test is done with them (before: every
    /// run left a few hundred `yaok-cli-*` directories behind).
    @Test func aTemporaryHomeIsRemovedWhenTheTestIsDoneWithIt() throws {
        var home = ""
        var peer: String?
        do {
            let cli = CLI.temporary("cleanup")
            home = cli.home
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let copy = cli  // a RunningPeer holds a copy: the home stays while any copy does
            peer = copy.home
            #expect(FileManager.default.fileExists(atPath: home))
        }
        #expect(peer == home)
        #expect(!FileManager.default.fileExists(atPath: home), "\(home) was left behind")
    }

    @Test func anUnusableHomeIsAClearError() throws {
        let blocker = FileManager.default.temporaryDirectory.appendingPathComponent("yaok-cli-file-\(UUID().uuidString)")
        try Data("not a directory".utf8).write(to: blocker)
        defer { try? FileManager.default.removeItem(at: blocker) }
        let result = try CLI(home: blocker.path + "/home").run(["status", "--json"])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("yaok: "))
        #expect((result.json as? [String: Any])?["error"] is String)
    }

    @Test func wrongPINsLockOutAcrossInvocations() throws {
        let cli = CLI.temporary("lockout")
        #expect(try cli.run(["init", "--name", "Alice"]).status == 0)
        #expect(try cli.run(["contacts"], pin: "000001").stderr.contains("Incorrect PIN"))
        #expect(try cli.run(["contacts"], pin: "000002").stderr.contains("Incorrect PIN"))
        #expect(try cli.run(["contacts"], pin: "000003").stderr.contains("Too many attempts. Try again in 30 seconds."))
        // Even the right PIN is refused during the lockout, in a new process.
        let locked = try cli.run(["contacts"])
        #expect(locked.status != 0)
        #expect(locked.stderr.contains("Too many attempts. Try again in"))
        let status = try #require(try cli.run(["status", "--json"]).json as? [String: Any])
        #expect((status["lockout_seconds"] as? Int ?? 0) > 0)
    }

    /// Issue 21 §6: a PIN that is too short is refused as soon as it is typed, and asked
    /// again, instead of after the confirmation, ending the command.
    @Test func aTooShortPINIsRefusedAtOnceAndAskedAgain() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { return }
        let cli = CLI.temporary("short-pin")
        let shown = try cli.runOnTerminal(["init", "--name", "Alice"], replies: [
            ("Choose a PIN", "123"), ("Choose a PIN", "135790"), ("Repeat the PIN", "135790"),
        ])
        #expect(shown.contains("PIN must be at least 6 digits"), "\(shown)")
        #expect(shown.components(separatedBy: "Repeat the PIN").count - 1 == 1, "\(shown)")
        #expect(shown.contains("Created Alice"), "\(shown)")
    }

    @Test func eventsAndReset() throws {
        let cli = CLI.temporary("reset")
        #expect(try cli.run(["init", "--name", "Alice"]).status == 0)
        _ = try cli.run(["contacts"], pin: "999999")
        let events = try #require(try cli.run(["events", "--json"]).json as? [[String: Any]])
        #expect(events.contains { $0["kind"] as? String == "wrong_pin" })
        // The help says the order it prints in (issue 21 §6: it said newest first).
        let help = try cli.run(["events", "--help"]).stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(help.contains("oldest first") && !help.contains("newest first"), "\(help)")
        let refused = try cli.run(["reset"])
        #expect(refused.status != 0)
        #expect(try cli.run(["status", "--json"]).stdout.contains("\"initialized\":true"))
        #expect(try cli.run(["reset", "--confirm"]).status == 0)
        #expect(try cli.run(["status", "--json"]).stdout.contains("\"initialized\":false"))
    }

    @Test func demoRuns() throws {
        let result = try CLI.temporary("demo").run(["demo"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Bob's conversation with Alice: \"Hello, Bob! 🔒\" (authenticated"))
        #expect(result.stdout.contains("Eve: Message is not addressed to this identity"))
    }
}
