import Glibc
import YaOKSystem

/// The relay's pid for the signal handler (SIGINT/SIGTERM of the tool kill the child too).
nonisolated(unsafe) var relayPidForSignals: pid_t = 0

/// A `yaok-relay` child process that the tool starts, SIGKILLs and restarts on the same
/// data directory and port. Its output goes to `DATA/../relay-N.log`.
final class RelayProcess {
    let binary: String
    let dataDirectory: String
    let extraArguments: [String]
    let logDirectory: String
    private(set) var pid: pid_t = 0
    private(set) var port: UInt16 = 0
    private(set) var pin = ""
    private(set) var starts = 0
    /// VmHWM (KiB) of each process started, read just before it was killed or stopped.
    private(set) var peakRSSKiB: [Int] = []

    init(binary: String, dataDirectory: String, logDirectory: String, port: UInt16, extraArguments: [String]) {
        self.binary = binary
        self.dataDirectory = dataDirectory
        self.logDirectory = logDirectory
        self.port = port
        self.extraArguments = extraArguments
    }

    /// Starts the relay and waits (up to `timeout` s) for its `listening:` line. Returns the
    /// time it took, in seconds.
    func start(timeout: Double = 30) throws -> Double {
        starts += 1
        let log = "\(logDirectory)/relay-\(starts).log"
        let arguments = [binary, "--listen", "127.0.0.1:\(port)", "--data", dataDirectory, "--self-signed"] + extraArguments
        let began = Clock.now()
        pid = try spawn(arguments, output: log)
        relayPidForSignals = pid
        let previousPin = pin
        while true {
            let text = readFile(log)
            var listening = false
            for line in text.split(separator: "\n") {
                if line.hasPrefix("pin: ") { pin = String(line.dropFirst(5)).trimmingCharacters() }
                if line.hasPrefix("listening: "), let colon = line.lastIndex(of: ":"), let p = UInt16(line[line.index(after: colon)...].trimmingCharacters()) {
                    port = p
                    listening = true
                }
            }
            if listening { break }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                pid = 0
                throw ToolError("The relay exited before listening (status \(status)); its output:\n\(text)")
            }
            if Double(Clock.now() - began) / 1e9 > timeout {
                throw ToolError("The relay printed no 'listening:' line within \(Int(timeout)) s; its output:\n\(text)")
            }
            usleep(10_000)
        }
        if starts > 1 && !previousPin.isEmpty && previousPin != pin {
            throw ToolError("The relay's pin changed across a restart of the same data directory: \(previousPin) then \(pin)")
        }
        return Double(Clock.now() - began) / 1e9
    }

    /// The running relay's VmHWM (peak resident set) in KiB, 0 if unreadable.
    func currentPeakRSSKiB() -> Int {
        guard pid > 0 else { return 0 }
        for line in readFile("/proc/\(pid)/status").split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(String(line.dropFirst(6).filter { $0.isNumber })) ?? 0
        }
        return 0
    }

    /// CPU seconds (user + system) of each process started, read before it was stopped.
    private(set) var cpuSeconds: [Double] = []

    /// The running relay's CPU time so far (user + system, /proc/PID/stat), in seconds.
    func currentCPUSeconds() -> Double { ProcessFigures.cpuSeconds(pid) }

    /// Bytes written to storage by each process started, read before it was stopped.
    private(set) var writtenBytes: [Int] = []

    /// The running relay's bytes written to storage so far (/proc/PID/io).
    func currentWrittenBytes() -> Int { ProcessFigures.writtenBytes(pid) }

    private func recordFinalFigures() {
        peakRSSKiB.append(currentPeakRSSKiB())
        cpuSeconds.append(currentCPUSeconds())
        writtenBytes.append(currentWrittenBytes())
    }

    /// SIGKILL, then reap.
    func kill9() {
        guard pid > 0 else { return }
        recordFinalFigures()
        _ = Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        pid = 0
        relayPidForSignals = 0
    }

    /// SIGTERM and wait up to 10 s (then SIGKILL). Returns the exit status (-1 if killed).
    @discardableResult
    func stop() -> Int32 {
        guard pid > 0 else { return 0 }
        recordFinalFigures()
        _ = Glibc.kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<1000 {
            if waitpid(pid, &status, WNOHANG) == pid {
                pid = 0
                relayPidForSignals = 0
                return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
            }
            usleep(10_000)
        }
        kill9()
        return -1
    }

    /// Whether the relay died by itself (returns its wait status if so).
    func exitedUnexpectedly() -> Int32? {
        guard pid > 0 else { return nil }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid {
            pid = 0
            relayPidForSignals = 0
            return status
        }
        return nil
    }

    /// `yaok-relay stats --data DIR --json`, as raw text.
    func stats() -> String {
        let out = "\(logDirectory)/stats.json"
        guard let child = try? spawn([binary, "stats", "--data", dataDirectory, "--json"], output: out) else { return "" }
        var status: Int32 = 0
        _ = waitpid(child, &status, 0)
        return readFile(out)
    }

    private func spawn(_ arguments: [String], output: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var cArguments = arguments.map { strdup($0) } + [nil]
        defer { for a in cArguments { free(a) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, arguments[0], &actions, nil, &cArguments, environ)
        guard rc == 0 else { throw ToolError("Cannot start \(arguments[0]): \(Socket.reason(rc))") }
        return child
    }
}

func readFile(_ path: String) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        bytes += buffer[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

struct ToolError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension StringProtocol {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\r" || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\r" || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
