import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKCrypto

/// Secure memory reports the slab regions it could not lock (`SecureMemory.lockFailures`,
/// shown in the node's diagnostics) and goes on working. The test process cannot see a
/// failure: it runs as root with CAP_IPC_LOCK, for which RLIMIT_MEMLOCK does not count. So
/// the helper (`yaok-store-writer slab`) runs as a child without that capability
/// (`setpriv`, util-linux) and with a locked-memory limit of a few pages (`prlimit`), and
/// makes slab regions past it.
@Suite struct SecureMemoryLockFailureTests {
    /// Pages the child may lock, and the regions it makes (one locked page each).
    static let lockablePages = 8
    static let regions = 24

    @Test(.enabled(if: LockedMemoryLimit.canDropIPCLock, LockedMemoryLimit.whyNot))
    func regionsPastTheLimitAreCountedAndStillWork() throws {
        let limit = Self.lockablePages * 4096
        let output = try LockedMemoryLimit.run(limit: limit, [StoreWriterExecutable.path, "slab", String(Self.regions)])
        // "regions R lock_failures F usable U of N"
        let words = output.split(separator: " ")
        let figures = stride(from: 0, to: words.count - 1, by: 2).reduce(into: [String: Int]()) { $0[String(words[$1])] = Int(words[$1 + 1]) }
        let regions = try #require(figures["regions"], "\(output)")
        let failures = try #require(figures["lock_failures"], "\(output)")
        #expect(regions == Self.regions, "every region was allocated: \(output)")
        // Each region past the few lockable pages failed to lock, and was counted.
        #expect(failures >= Self.regions - Self.lockablePages, "\(output)")
        #expect(failures <= Self.regions, "\(output)")
        let usable = try #require(words.firstIndex(of: "usable").flatMap { Int(words[$0 + 1]) }, "\(output)")
        let made = try #require(words.last.flatMap { Int($0) }, "\(output)")
        #expect(usable == made && made > 0, "every secret read back intact: \(output)")
    }
}

/// Runs a child with a locked-memory limit and without CAP_IPC_LOCK.
enum LockedMemoryLimit {
    /// Whether a child can be run without CAP_IPC_LOCK: this process lacks it already, or
    /// `setpriv` can drop it (a container may refuse to change the bounding set).
    static let canDropIPCLock: Bool = whyNot == nil

    /// nil if it can; else why not, printed as the test's skip reason.
    static let whyNot: Comment? = {
        guard hasIPCLock() else { return nil }
        guard let setpriv = tool("setpriv") else { return "setpriv (util-linux) is missing: scripts/install-deps installs it" }
        let status = exitStatus(setpriv, ["--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock", "--", "true"])
        return status == 0 ? nil : "CAP_IPC_LOCK cannot be dropped here (setpriv exited \(status)): mlock never fails for this process"
    }()

    /// Whether this process may lock any amount of memory (bit 14 of its effective set).
    static func hasIPCLock() -> Bool {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let bits = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16) else { return true }
        return bits & (1 << 14) != 0
    }

    static func tool(_ name: String) -> String? {
        ["/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func exitStatus(_ path: String, _ arguments: [String]) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }

    /// `command`'s standard output, run under `prlimit --memlock=limit` and, if this process
    /// holds CAP_IPC_LOCK, `setpriv` without it. Throws if it fails.
    static func run(limit: Int, _ command: [String]) throws -> String {
        guard let prlimit = tool("prlimit") else { throw YaOKError(.internal, "prlimit (util-linux) is missing: scripts/install-deps installs it") }
        var arguments = ["--memlock=\(limit):\(limit)"]
        if hasIPCLock() {
            guard let setpriv = tool("setpriv") else { throw YaOKError(.internal, "setpriv (util-linux) is missing") }
            arguments += [setpriv, "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock", "--"]
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: prlimit)
        p.arguments = arguments + command
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw YaOKError(.internal, "\(command.joined(separator: " ")) exited \(p.terminationStatus): \(errors)") }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
