import Foundation
import Glibc
import Testing
@testable import yaok
import YaOK

/// A `yaok run` in the background: its stdout read line by line as it comes.
final class RunningPeer: @unchecked Sendable {
    let process = Process()
    let cli: CLI
    private let lines = Locked<[String]>([])
    private let errors = Locked<String>("")
    private let readers = DispatchGroup()

    /// Starts `yaok --home … run --json ARGS` (as `user`, via setpriv, if given) and waits
    /// for its "started" line.
    init(_ cli: CLI, _ arguments: [String] = [], asUser user: uid_t? = nil) throws {
        self.cli = cli
        let command = ["--home", cli.home, "run", "--json"] + arguments
        if let user {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", CLI.executable.path] + command
        } else {
            process.executableURL = CLI.executable
            process.arguments = command
        }
        var env = ProcessInfo.processInfo.environment
        env["YAOK_PIN"] = cli.pin
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let lines = self.lines, errors = self.errors
        DispatchQueue.global().async(group: readers) {
            var pending = Data()
            while true {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    lines.withLock { $0.append(line) }
                }
            }
        }
        DispatchQueue.global().async(group: readers) {
            let data = err.fileHandleForReading.readDataToEndOfFile()
            errors.withLock { $0 = String(decoding: data, as: UTF8.self) }
        }
        guard try waitFor(event: "started", timeout: 30) != nil else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw CLIError("yaok run did not start: \(stderr)")
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var output: [String] { lines.withLock { $0 } }
    var stderr: String { errors.withLock { $0 } }

    /// The events printed so far (each line parsed).
    var events: [[String: Any]] {
        output.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits for an event with "event" == `name` matching `where`; nil on timeout.
    func waitFor(event name: String, timeout: Double = 10, where match: ([String: Any]) -> Bool = { _ in true }) throws -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let e = events.first(where: { $0["event"] as? String == name && match($0) }) { return e }
            if !process.isRunning { return events.first { $0["event"] as? String == name && match($0) } }
            usleep(20_000)
        }
        return nil
    }

    /// Sends `signal` and waits for the exit; returns the exit status.
    func stop(_ signal: Int32 = SIGTERM, timeout: Double = 10) -> Int32? {
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        guard !process.isRunning else { return nil }
        readers.wait()
        return process.terminationStatus
    }
}

/// Two people who have each other as contacts.
func pairOfContacts(_ label: String) throws -> (alice: CLI, bob: CLI) {
    let alice = CLI.temporary("\(label)-alice"), bob = CLI.temporary("\(label)-bob")
    #expect(try alice.run(["init", "--name", "Alice"]).status == 0)
    #expect(try bob.run(["init", "--name", "Bob"]).status == 0)
    let aliceCard = try #require((try alice.run(["card", "--json"]).json as? [String: Any])?["card"] as? String)
    let bobCard = try #require((try bob.run(["card", "--json"]).json as? [String: Any])?["card"] as? String)
    #expect(try alice.run(["contacts", "add", bobCard]).status == 0)
    #expect(try bob.run(["contacts", "add", aliceCard]).status == 0)
    return (alice, bob)
}

@Suite(.serialized) struct PeerTests {
    static let statuses: Set<String> = ["pending", "sent", "delivered", "failed"]

    @Test func sendHistoryOutboxAndRetryJSONShapes() throws {
        let (alice, _) = try pairOfContacts("shapes")

        let sent = try alice.run(["send", "Bob", "Hello, Bob!", "--json"])
        #expect(sent.status == 0, "\(sent.stderr)")
        let message = try #require(sent.json as? [String: Any])
        let id = try #require(message["message_id"] as? String)
        #expect(id.count == 32 && id.allSatisfy(\.isHexDigit))
        #expect(message["status"] as? String == "pending")
        #expect(message["direction"] as? String == "outgoing")
        #expect(message["text"] as? String == "Hello, Bob!")
        #expect(message["contact"] as? String == "Bob")
        #expect(message["waiting_for_transport"] as? Bool == true)  // nothing runs: no transport
        let human = try alice.run(["send", "bob", "Second"])
        #expect(human.stdout.hasSuffix("to Bob: Will send when connected\n"), "\(human.stdout)")

        let history = try #require(try alice.run(["history", "Bob", "--json"]).json as? [String: Any])
        #expect(history["contact"] as? String == "Bob")
        let messages = try #require(history["messages"] as? [[String: Any]])
        #expect(messages.map { $0["text"] as? String } == ["Hello, Bob!", "Second"])
        for m in messages {
            #expect(Self.statuses.contains(m["status"] as? String ?? ""))
            #expect(m["direction"] as? String == "outgoing")
            #expect(m["sender_timestamp_ms"] is Int)
        }
        #expect((try alice.run(["history", "Bob", "--limit", "1", "--json"]).json as? [String: Any])
            .flatMap { $0["messages"] as? [Any] }?.count == 1)
        #expect(try alice.run(["history", "Bob"]).stdout.contains("You: Hello, Bob!  [Pending]"))
        #expect(try alice.run(["history", "Bob", "--limit", "0"]).status != 0)

        let outbox = try #require(try alice.run(["outbox", "--json"]).json as? [[String: Any]])
        #expect(outbox.count == 2)
        let entry = try #require(outbox.first { $0["message_id"] as? String == id })
        #expect(entry["contact"] as? String == "Bob")
        #expect(entry["status"] as? String == "pending")
        #expect(entry["attempts"] is Int)
        #expect(entry.keys.contains("next_attempt_ms"))
        #expect(entry["waiting_for_transport"] as? Bool == true)
        #expect(try alice.run(["outbox"]).stdout.contains("to Bob"))

        let retried = try #require(try alice.run(["retry", id, "--json"]).json as? [String: Any])
        #expect(retried["message_id"] as? String == id)
        #expect(Self.statuses.contains(retried["status"] as? String ?? ""))
        let badID = try alice.run(["retry", "1234", "--json"])
        #expect(badID.status == 1)
        #expect((badID.json as? [String: Any])?["error"] as? String == "A message ID is 32 hex characters")
        #expect(try alice.run(["retry", String(repeating: "0", count: 32)]).status != 0)

        let nobody = try alice.run(["send", "Carol", "hi"])
        #expect(nobody.status == 1)
        #expect(nobody.stderr == "yaok: No contact matches \"Carol\"\n")
        #expect(try alice.run(["send", "Bob", "   "]).stderr.contains("Message is empty"))

        let status = try #require(try alice.run(["status", "--json"]).json as? [String: Any])
        #expect(status["initialized"] as? Bool == true)
        #expect(status.keys.contains("diagnostics"))
        // With YAOK_PIN (the CLI tests always set it) status unlocks: the contacts and the
        // outbox show without `yaok run` (issue 21 §6).
        #expect(status["locked"] as? Bool == false)
        let diagnostics = try #require(status["diagnostics"] as? [String: Any])
        #expect((diagnostics["contacts"] as? [[String: Any]])?.contains { $0["name"] as? String == "Bob" } == true)
        #expect(diagnostics["outbox"] != nil)
        // A wrong one leaves it locked and says so, without failing the command.
        let wrong = try alice.run(["status", "--json"], pin: "000000")
        #expect(wrong.status == 0 && wrong.stderr.contains("YAOK_PIN did not unlock: Incorrect PIN"))
        #expect((wrong.json as? [String: Any])?["locked"] as? Bool == true)
    }

    @Test func commandsGoThroughTheRunningPeerWithinASecond() throws {
        let (alice, _) = try pairOfContacts("socket")
        let peer = try RunningPeer(alice)
        #expect(try peer.waitFor(event: "warning")?["message"] as? String == "No transports enabled")
        let socket = ControlSocket.path(home: alice.home)
        var st = stat()
        #expect(lstat(socket, &st) == 0 && st.st_mode & 0o777 == 0o600)

        // A wrong PIN would fail a direct command: these answers come from `run`, which is
        // unlocked already.
        let started = Date()
        let sent = try alice.run(["send", "Bob", "through the socket", "--json"], pin: "000000")
        #expect(Date().timeIntervalSince(started) < 1.0)
        #expect(sent.status == 0, "\(sent.stderr)")
        let message = try #require(sent.json as? [String: Any])
        #expect(message["contact"] as? String == "Bob")
        let id = try #require(message["message_id"] as? String)

        let history = try #require(try alice.run(["history", "Bob", "--json"], pin: "000000").json as? [String: Any])
        #expect((history["messages"] as? [[String: Any]])?.contains { $0["message_id"] as? String == id } == true)
        let outbox = try #require(try alice.run(["outbox", "--json"], pin: "000000").json as? [[String: Any]])
        #expect(outbox.contains { $0["message_id"] as? String == id })
        #expect(try alice.run(["retry", id], pin: "000000").status == 0)
        let status = try #require(try alice.run(["status", "--json"], pin: "000000").json as? [String: Any])
        #expect(status["locked"] as? Bool == false)
        #expect(!((status["diagnostics"] as? [String: Any]) ?? [:]).isEmpty)

        // Errors come back as the direct command prints them.
        let missing = try alice.run(["send", "Carol", "hi", "--json"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "yaok: No contact matches \"Carol\"\n")
        #expect((missing.json as? [String: Any])?["status"] as? Int == Int(YaOKError.Code.notFound.rawValue))

        // Other commands need the node itself, which `run` holds: a clear refusal.
        let busy = try alice.run(["contacts", "--json"])
        #expect(busy.status == 1)
        #expect((busy.json as? [String: Any])?["status"] as? Int == Int(YaOKError.Code.busy.rawValue))
        #expect(busy.stderr.contains("`yaok run` is serving it"))

        // The human output is the same text as without `run`.
        #expect(try alice.run(["history", "Bob"]).stdout.contains("You: through the socket  [Pending]"))
        #expect(peer.stop() == 0)
    }

    /// `run` keeps the user's auto-lock; once it has locked, a command through the socket
    /// unlocks with the PIN ($YAOK_PIN here), and a wrong PIN is refused as it would be
    /// directly, with `run` carrying on.
    @Test func afterAutoLockTheSocketAsksForThePIN() throws {
        let (alice, _) = try pairOfContacts("autolock")
        do {
            let node = try Node(dataDirectory: alice.home)
            defer { node.close() }
            try node.unlock(pin: alice.pin)
            try node.setAutoLock(.after(seconds: 1))
        }
        let peer = try RunningPeer(alice)
        #expect(try peer.waitFor(event: "locked", timeout: 10) { $0["reason"] as? String == "auto_lock" } != nil)
        #expect((try alice.run(["status", "--json"], pin: "").json as? [String: Any])?["locked"] as? Bool == true)

        let wrong = try alice.run(["send", "Bob", "hi"], pin: "000000")
        #expect(wrong.status == 1)
        #expect(wrong.stderr.hasPrefix("yaok: Incorrect PIN: try again"))

        let sent = try alice.run(["send", "Bob", "after the lock", "--json"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect((sent.json as? [String: Any])?["text"] as? String == "after the lock")
        // Unlocked again through the socket (after the "locked" line).
        #expect(try peer.waitFor(event: "unlocked", timeout: 5) { _ in
            peer.events.drop { $0["event"] as? String != "locked" }.contains { $0["event"] as? String == "unlocked" }
        } != nil)
        #expect(peer.process.isRunning)
        #expect(peer.stop() == 0)
    }

    /// Two peers on 127.0.0.1 over the LAN transport (static peer, no multicast): a message
    /// queued before they meet and one sent while they are linked both arrive, and both
    /// sides print what happened.
    @Test func twoPeersExchangeAMessageOverTheLAN() throws {
        let (alice, bob) = try pairOfContacts("lan")
        let early = try #require(try alice.run(["send", "Bob", "queued before we met", "--json"]).json as? [String: Any])
        #expect(early["waiting_for_transport"] as? Bool == true)

        let lan = ["--lan", "--lan-listen", "127.0.0.1", "--no-lan-discovery"]
        let a = try RunningPeer(alice, lan)
        let port = try #require(try a.waitFor(event: "started")?["lan_port"] as? Int)
        let b = try RunningPeer(bob, lan + ["--lan-peer", "127.0.0.1:\(port)"])
        #expect(try a.waitFor(event: "contact_online", timeout: 15) { $0["contact"] as? String == "Bob" } != nil)
        #expect(try b.waitFor(event: "contact_online", timeout: 15) { $0["contact"] as? String == "Alice" && $0["transport"] as? String == "WiFi" } != nil)

        let live = try #require(try alice.run(["send", "Bob", "Hello over the LAN 👋", "--json"]).json as? [String: Any])
        let id = try #require(live["message_id"] as? String)
        #expect(live["waiting_for_transport"] as? Bool == false)
        for messageID in [early["message_id"] as? String, id] {
            #expect(try b.waitFor(event: "message_received", timeout: 15) {
                $0["message_id"] as? String == messageID && $0["contact"] as? String == "Alice"
            } != nil)
            #expect(try a.waitFor(event: "message_status", timeout: 15) {
                $0["message_id"] as? String == messageID && $0["status"] as? String == "delivered"
            } != nil)
        }

        let history = try #require(try bob.run(["history", "Alice", "--json"]).json as? [String: Any])
        let texts = (history["messages"] as? [[String: Any]] ?? []).filter { $0["direction"] as? String == "incoming" }.map { $0["text"] as? String }
        #expect(texts == ["queued before we met", "Hello over the LAN 👋"])
        #expect(try bob.run(["history", "Alice"]).stdout.contains("Alice: Hello over the LAN 👋"))
        #expect((try alice.run(["outbox", "--json"]).json as? [Any])?.isEmpty == true)
        let status = try #require(try alice.run(["status", "--json"]).json as? [String: Any])
        let diagnostics = try #require(status["diagnostics"] as? [String: Any])
        #expect((diagnostics["transports"] as? [[String: Any]])?.first?["state"] as? String == "running")
        #expect((diagnostics["warnings"] as? [Any])?.isEmpty == true)

        // Transports switch at runtime through the running peer.
        let off = try #require(try alice.run(["transport", "lan", "off", "--json"]).json as? [String: Any])
        #expect(off["state"] as? String == "disabled")
        let warned = try #require(try alice.run(["status", "--json"]).json as? [String: Any])
        #expect((warned["diagnostics"] as? [String: Any])?["warnings"] as? [String] == ["No transports enabled"])
        #expect(try alice.run(["transport", "lan", "on"]).stdout.contains("WiFi: running"))
        #expect(try alice.run(["transport", "ble", "on"]).status != 0)

        #expect(b.stop() == 0)
        #expect(a.stop() == 0)
    }

    /// `run` keeps receiving after auto-lock: what arrives is held, and shows up once a
    /// command through the control socket unlocks with the PIN.
    @Test func anAutoLockedPeerStillReceives() throws {
        let (alice, bob) = try pairOfContacts("held")
        do {
            let node = try Node(dataDirectory: bob.home)
            defer { node.close() }
            try node.unlock(pin: bob.pin)
            try node.setAutoLock(.after(seconds: 1))
        }
        let lan = ["--lan", "--lan-listen", "127.0.0.1", "--no-lan-discovery"]
        let b = try RunningPeer(bob, lan)
        let port = try #require(try b.waitFor(event: "started")?["lan_port"] as? Int)
        #expect(try b.waitFor(event: "locked", timeout: 10) != nil)
        let a = try RunningPeer(alice, lan + ["--lan-peer", "127.0.0.1:\(port)"])
        #expect(try a.waitFor(event: "contact_online", timeout: 15) != nil)

        let sent = try #require(try alice.run(["send", "Bob", "while you were locked", "--json"]).json as? [String: Any])
        let id = try #require(sent["message_id"] as? String)
        #expect(try a.waitFor(event: "message_status", timeout: 15) { $0["message_id"] as? String == id && $0["status"] as? String == "sent" } != nil)
        #expect(b.process.isRunning)
        #expect(try b.waitFor(event: "message_received", timeout: 1) == nil)  // held: locked

        // `status` needs no PIN; `history` asks for it and unlocks `run`'s node.
        #expect((try bob.run(["status", "--json"], pin: "").json as? [String: Any])?["locked"] as? Bool == true)
        #expect(try bob.run(["history", "Alice"]).status == 0)
        #expect(try b.waitFor(event: "message_received", timeout: 15) { $0["message_id"] as? String == id } != nil)
        #expect(try a.waitFor(event: "message_status", timeout: 15) { $0["message_id"] as? String == id && $0["status"] as? String == "delivered" } != nil)
        let history = try #require(try bob.run(["history", "Alice", "--json"]).json as? [String: Any])
        #expect((history["messages"] as? [[String: Any]])?.last?["text"] as? String == "while you were locked")

        #expect(a.stop() == 0)
        #expect(b.stop() == 0)
    }

    @Test func garbageOnTheControlSocketLeavesRunAlive() throws {
        let (alice, _) = try pairOfContacts("garbage")
        let peer = try RunningPeer(alice)
        let path = ControlSocket.path(home: alice.home)

        func exchange(_ bytes: [UInt8]) throws -> [UInt8] { try ControlSocketTests.raw(path, bytes) }
        let huge = try ControlSocketTests.body(try exchange([0x7f, 0xff, 0xff, 0xff]))
        #expect(huge["error"]?.string?.hasPrefix("Request too large") == true)
        let garbage = try ControlSocketTests.body(try exchange(ControlSocket.frame(Array("\u{0}\u{1}garbage".utf8))))
        #expect(garbage["error"]?.string?.hasPrefix("Malformed request") == true)
        let unknown = try ControlSocketTests.body(try exchange(ControlSocket.frame(Array(#"{"cmd":"rm -rf"}"#.utf8))))
        #expect(unknown["error"]?.string == "Unknown command \"rm -rf\"")
        let missing = try ControlSocketTests.body(try exchange(ControlSocket.frame(Array(#"{"cmd":"send","contact":"Bob"}"#.utf8))))
        #expect(missing["error"]?.string == "Request needs \"text\" (a string)")
        let tooLong = try ControlSocketTests.body(try exchange(ControlSocket.frame(Array(
            (#"{"cmd":"send","contact":"Bob","text":""# + String(repeating: "x", count: 11_000) + #""}"#).utf8))))
        #expect(tooLong["status"]?.int == Int64(YaOKError.Code.messageTooLarge.rawValue))
        // A client that connects and goes quiet, and one that hangs up mid-request.
        let quiet = try #require(try UnixSocket.connect(to: path))
        defer { close(quiet) }
        let rude = try #require(try UnixSocket.connect(to: path))
        _ = [UInt8(0), 0, 1].withUnsafeBytes { send(rude, $0.baseAddress, $0.count, 0) }
        close(rude)

        #expect(peer.process.isRunning)
        #expect(try alice.run(["send", "Bob", "still here"], pin: "000000").status == 0)
        #expect(peer.stop() == 0)
    }

    @Test func sigtermAndSigintEndRunCleanly() throws {
        let (alice, _) = try pairOfContacts("signal")
        for signal in [SIGTERM, SIGINT] {
            let peer = try RunningPeer(alice)
            #expect(peer.stop(signal) == 0)
            #expect(try peer.waitFor(event: "stopped", timeout: 1)?["signal"] as? Int == Int(signal))
            #expect(!FileManager.default.fileExists(atPath: ControlSocket.path(home: alice.home)))
            #expect(peer.stderr.isEmpty)
            // The data directory is free again: a direct command opens it.
            #expect(try alice.run(["contacts", "--json"]).status == 0)
        }
    }

    @Test func aStaleSocketFileIsIgnoredAndReplaced() throws {
        let (alice, _) = try pairOfContacts("stale")
        let path = ControlSocket.path(home: alice.home)
        // What a `run` killed with SIGKILL leaves behind: a socket file nobody listens on.
        let fd = try UnixSocket.stream()
        #expect(try UnixSocket.withAddress(path) { bind(fd, $0, $1) } == 0)
        close(fd)
        #expect(FileManager.default.fileExists(atPath: path))

        let direct = try alice.run(["send", "Bob", "direct", "--json"])
        #expect(direct.status == 0, "\(direct.stderr)")

        let peer = try RunningPeer(alice)
        #expect(try alice.run(["send", "Bob", "via run"], pin: "000000").status == 0)
        #expect(peer.stop() == 0)

        // Killed outright: the next `run` replaces its socket file.
        let killed = try RunningPeer(alice)
        #expect(killed.stop(SIGKILL) != nil)
        #expect(FileManager.default.fileExists(atPath: path))
        let again = try RunningPeer(alice)
        #expect(try alice.run(["outbox", "--json"], pin: "000000").status == 0)
        #expect(again.stop() == 0)
    }

    /// A peer of another uid is dropped by `run` (SO_PEERCRED), and a client does not talk
    /// to a `run` of another uid. Needs root (to run as nobody, and to get past the
    /// socket's mode, which keeps other users out before the uid check is even reached).
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func anotherUsersConnectionIsRefused() throws {
        let nobody: uid_t = 65534
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("yaok-cli-uid-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(chown(root, nobody, gid_t(nobody)) == 0)
        let cli = CLI(home: root + "/home")

        let setup = Process()
        setup.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        setup.arguments = ["--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", CLI.executable.path,
                           "--home", cli.home, "init", "--name", "Nobody"]
        setup.environment = ["YAOK_PIN": cli.pin, "PATH": "/usr/bin:/bin"]
        setup.standardOutput = FileHandle.nullDevice
        try setup.run()
        setup.waitUntilExit()
        try #require(setup.terminationStatus == 0)

        let peer = try RunningPeer(cli, asUser: nobody)
        let path = ControlSocket.path(home: cli.home)

        // Root passes the file mode; the server's uid check drops the connection unanswered.
        let fd = try #require(try UnixSocket.connect(to: path))
        let request = ControlSocket.frame(Array(#"{"cmd":"status"}"#.utf8))
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var byte: UInt8 = 0
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        #expect(recv(fd, &byte, 1, 0) <= 0)
        close(fd)

        // The client refuses a server of another uid.
        let refused = try cli.run(["status", "--json"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("belongs to another user"))
        #expect(peer.process.isRunning)
        #expect(peer.stop() == 0)
    }
}
