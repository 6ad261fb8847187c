import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// SIGKILL in the middle of writes: the store opens, passes integrity_check, and holds
/// every message the writer reported as committed.
@Suite struct CrashTests {
    private var writerPath: String { StoreWriterExecutable.path }

    @Test(arguments: [1, 2, 3])
    func killDuringWrites(round: Int) throws {
        let dir = TempDir()
        defer { dir.remove() }
        do {
            let node = try makeNode(dir)
            #expect(try node.addContact(card: try cardText("Bob")).id == 1)
            node.close()
        }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: writerPath)
        child.arguments = [dir.path, testPIN]
        let out = Pipe()
        child.standardOutput = out
        try child.run()

        // Let it commit a number of messages (more each round), then kill it mid-stream.
        var committed = 0
        var buffer = Data()
        let handle = out.fileHandleForReading
        while committed < 40 * round {
            let chunk = handle.availableData
            if chunk.isEmpty { break }  // the child died on its own: fail below
            buffer.append(chunk)
            let lines = String(decoding: buffer, as: UTF8.self).split(separator: "\n")
            committed = lines.compactMap { Int($0) }.max() ?? 0
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal)
        // Lines printed between our last read and the kill were committed too.
        buffer.append(handle.readDataToEndOfFile())
        committed = String(decoding: buffer, as: UTF8.self).split(separator: "\n").compactMap { Int($0) }.max() ?? 0
        #expect(committed >= 40 * round)

        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        try node.unlock(pin: testPIN)
        let integrity = try node.withStore { store, _ in try store.db.rows("PRAGMA integrity_check") { $0.text(0) } }
        #expect(integrity == ["ok"])
        var texts = Set<String>()
        var cursor: String? = nil
        repeat {
            let page = try node.history(1, before: cursor, limit: 1000)
            texts.formUnion(page.messages.map(\.text))
            cursor = page.olderCursor
        } while cursor != nil
        for n in 1...committed { #expect(texts.contains("message \(n)"), "message \(n) lost") }
    }

    /// The failure is counted before the PIN is checked: a process killed while Argon2id
    /// runs has already counted its attempt, so killing the app during each check cannot
    /// buy unlimited tries. The child is killed when its memory shows Argon2id filling its
    /// 32 MiB, not after a guessed delay.
    @Test func aPINCheckKilledDuringArgon2idIsCounted() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var options = fastOptions()
        options.pinHashing = PINHashing(opsLimit: 8, memLimit: 64 << 20)  // production-grade, and slow enough to be caught mid-hash
        do {
            let node = try Node(dataDirectory: dir.path, options: options)
            _ = try node.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
            node.close()
        }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: writerPath)
        child.arguments = ["unlock", dir.path, "999999"]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("ready") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        let pid = child.processIdentifier
        let baseline = residentBytes(pid)
        var hashing = false
        for _ in 0..<100_000 where child.isRunning {
            if residentBytes(pid) - baseline > 16 << 20 { hashing = true; break }
            usleep(100)
        }
        kill(pid, SIGKILL)
        child.waitUntilExit()
        #expect(hashing, "the child was not seen hashing")
        #expect(child.terminationReason == .uncaughtSignal)

        let store = try Store(directory: dir.path)
        defer { store.close() }
        #expect(try store.lockState()?.failures == 1)
    }

    /// Resident memory of `pid` in bytes (/proc/PID/statm, second field), 0 if unreadable.
    private func residentBytes(_ pid: Int32) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
