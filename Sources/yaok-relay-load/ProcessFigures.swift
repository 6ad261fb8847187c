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
