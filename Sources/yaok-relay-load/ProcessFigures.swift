import Glibc

/// What a process has cost so far, from /proc: CPU time and bytes written to storage. The
/// tool reads them for the relay it runs, or for relays named with `--relay-pid`.
enum ProcessFigures {
    /// User + system CPU seconds (/proc/PID/stat), 0 if unreadable.
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard pid > 0 else { return 0 }
        let stat = readFile("/proc/\(pid)/stat")
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state(0) ... utime(11) stime(12), in clock ticks.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Bytes the process caused to be written to storage (/proc/PID/io `write_bytes`,
    /// counted when pages are dirtied: the database's own writes, WAL and checkpoints,
    /// not those of a database server it talks to), 0 if unreadable.
    static func writtenBytes(_ pid: pid_t) -> Int {
        guard pid > 0 else { return 0 }
        for line in readFile("/proc/\(pid)/io").split(separator: "\n") where line.hasPrefix("write_bytes:") {
            return Int(String(line.dropFirst(12).filter { $0.isNumber })) ?? 0
        }
        return 0
    }
}

/// Removes `path` and everything under it (the tool's own temporary directory).
func removeTree(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if (st.st_mode & S_IFMT) == S_IFDIR, let dir = opendir(path) {
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            removeTree(path + "/" + name)
        }
        closedir(dir)
        rmdir(path)
    } else {
        unlink(path)
    }
}

/// A PostgreSQL server's CPU so far (`--server-pid`, its postmaster), split as the server's
/// processes are: the backends serving connections (the statements: what the relay's
/// store asks of it), and the rest (postmaster, WAL writer, checkpointer, background
/// writer, autovacuum: work that follows the writes later, and that a short run may or
/// may not catch; a worker that exited before the end is not counted).
struct ServerCPU {
    var backends = 0.0
    var background = 0.0
    var total: Double { backends + background }

    static func - (a: ServerCPU, b: ServerCPU) -> ServerCPU {
        ServerCPU(backends: a.backends - b.backends, background: a.background - b.background)
    }

    static func of(_ pid: pid_t) -> ServerCPU {
        var figures = ServerCPU(backends: 0, background: ProcessFigures.cpuSeconds(pid))
        guard let dir = opendir("/proc") else { return figures }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let child = pid_t(name), child != pid else { continue }
            let stat = readFile("/proc/\(child)/stat")
            guard let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, pid_t(fields[1]) == pid else { continue }
            // The process title: "postgres: USER DB [local] idle" for a backend,
            // "postgres: walwriter", "postgres: autovacuum worker DB" and so on otherwise.
            let title = readFile("/proc/\(child)/cmdline")
            let isBackground = ["checkpointer", "background writer", "walwriter", "autovacuum", "logical replication",
                                "stats collector", "archiver", "walsender", "walreceiver", "startup"].contains { title.contains($0) }
            if isBackground { figures.background += ProcessFigures.cpuSeconds(child) } else { figures.backends += ProcessFigures.cpuSeconds(child) }
        }
        return figures
    }
}
