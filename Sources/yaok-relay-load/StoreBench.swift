import Glibc
import YaOKCrypto
import YaOKRelayServer
import YaOKWire

/// `yaok-relay-load store`: the relay's store alone, without TLS, sessions or the event
/// loop, in the load test's pattern: POSTs to random mailboxes of `--clients`, each DELETEd
/// once `--inflight` newer ones are stored, `--batch` writes per commit (group commit).
/// It measures what a whole-relay run on a shared machine cannot tell apart: the store's
/// CPU per message (this process, plus nothing else: SQLite runs in it) and the bytes it
/// wrote per message (/proc/self/io), commit by commit, over the whole run, so a store
/// whose cost grows as it fills shows. With `--postgres` the database server's CPU is
/// not counted (it is another process); wall time per message is printed too.
struct StoreBench {
    let options: Options

    func run() throws -> Bool {
        let directory = options.data ?? makeTemporaryDirectory()
        let owned = options.data == nil
        defer { if owned { removeTree(directory) } }
        let store: RelayStore = try options.postgres.map {
            try PostgresRelayStore(conninfo: $0, poolSize: 2, directory: directory)
        } ?? SQLiteRelayStore(directory: directory)
        defer { store.close() }
        let quota = MailboxQuota(packets: 100_000, bytes: 1 << 40, addressBytes: 1 << 50, prefixBytes: 1 << 50)
        let mailboxes = try (0..<options.clients).map { _ in try MailboxID(bytes: Sodium.randomBytes(32)) }
        let posters = (0..<options.clients).map { _ in Sodium.randomBytes(32) }
        let payloads = (0..<64).map { _ in Sodium.randomBytes(Int.random(in: options.payloadMin...options.payloadMax)) }
        var inflight: [StoredPacketRef] = []
        var head = 0
        let half = max(1, options.batch / 2)
        var posted = 0, deleted = 0, commits = 0, delivered = 0
        // Wall time in the commits and in the checkpoints after them (the disk thread's
        // share of each: what a relay waits for besides CPU).
        var commitSeconds = 0.0, checkpointSeconds = 0.0
        // --reads: each commit's new packets are then read as a relay on a shared store
        // delivers them (one read per subscriber session, after its cursor).
        var cursors: [MailboxID: Int64] = [:]
        let serverAtStart = options.serverPid.map(ServerCPU.of) ?? ServerCPU()
        let start = (cpu: Self.cpuSeconds(), written: ProcessFigures.writtenBytes(getpid()), wall: Self.seconds())
        var mark = start
        var lines: [String] = []
        let every = max(options.messages / 10, 1)
        var nextMark = every
        let nowMs = Int64(Self.seconds() * 1000)
        // A packet's expiry as a relay sees it: its creation (about now) plus its lifetime,
        // so it rises through the run. With one expiry for all, the deletion notes, keyed
        // by (expiry, note), went to random pages of a growing tree: a cost that grew
        // through the run and that a relay does not have.
        let wallAtStart = Self.seconds()
        func expiresAtMs() -> Int64 { nowMs + 3_600_000 + Int64((Self.seconds() - wallAtStart) * 1000) }
        while deleted < options.messages {
            var writes: [RelayStoreWrite] = []
            for _ in 0..<min(half, options.messages - posted) {
                let i = Int.random(in: 0..<mailboxes.count)
                var post = RelayPost(mailbox: mailboxes[i], messageID: .random(), expiresAtMs: expiresAtMs(),
                                     packet: payloads[posted % payloads.count] + withUnsafeBytes(of: posted) { Array($0) })
                post.poster = posters[Int.random(in: 0..<posters.count)]
                post.address = [127, 0, 0, 1]
                writes.append(.post(post))
                inflight.append(StoredPacketRef(mailbox: post.mailbox, messageID: post.messageID))
                posted += 1
            }
            // DELETEs of the oldest, once the window is full (or the posts are done).
            var refs: [StoredPacketRef] = []
            while head < inflight.count && (inflight.count - head > options.inflight || posted == options.messages)
                    && refs.count < half {
                refs.append(inflight[head])
                head += 1
            }
            for ref in refs { writes.append(.delete([ref])) }
            let commitStart = Self.seconds()
            let outcomes = try store.commit(writes, nowMs: nowMs, quota: quota)
            commits += 1
            // As the relay's disk thread does after each round.
            let checkpointStart = Self.seconds()
            try store.checkpointIfDue()
            let checkpointEnd = Self.seconds()
            commitSeconds += checkpointStart - commitStart
            checkpointSeconds += checkpointEnd - checkpointStart
            var stored: [MailboxID] = []
            for (write, outcome) in zip(writes, outcomes) {
                switch outcome {
                case .stored: if case .post(let post) = write { stored.append(post.mailbox) }
                case .deleted(count: 1, bytes: _): break
                default: throw ToolError("store: unexpected outcome \(outcome)")
                }
            }
            if options.reads {
                let boxes = Array(Set(stored))
                let reads = boxes.map { [RelayPageRequest(mailbox: $0, after: cursors[$0] ?? 0)] }
                let pages = try store.packets(reads: reads, maxPackets: 64, maxBytes: 256 << 10, nowMs: nowMs)
                for page in pages.joined() {
                    if let last = page.packets.last { cursors[page.mailbox] = last.sequence }
                    delivered += page.packets.count
                }
            }
            deleted += refs.count
            if head > 1 << 16 {
                inflight.removeFirst(head)
                head = 0
            }
            if deleted >= nextMark || deleted == options.messages {
                let now = (cpu: Self.cpuSeconds(), written: ProcessFigures.writtenBytes(getpid()), wall: Self.seconds())
                let n = Double(max(deleted - (nextMark - every), 1))
                lines.append("\(Self.fmt((now.cpu - mark.cpu) * 1e6 / n)) µs, \(Self.fmt(Double(now.written - mark.written) / 1024 / n, 1)) KiB, wall \(Self.fmt((now.wall - mark.wall) * 1e6 / n)) µs")
                mark = now
                nextMark += every
            }
        }
        let end = (cpu: Self.cpuSeconds(), written: ProcessFigures.writtenBytes(getpid()), wall: Self.seconds())
        let n = Double(options.messages)
        let cpuUs = (end.cpu - start.cpu) * 1e6 / n, wallUs = (end.wall - start.wall) * 1e6 / n
        let kib = Double(end.written - start.written) / 1024 / n
        let left = try store.storedPacketCount(nowMs: nowMs)
        let server = options.serverPid.map { ServerCPU.of($0) - serverAtStart }
        let serverUs = server.map { $0.total * 1e6 / n }
        print("== yaok-relay-load store: \(options.postgres == nil ? "SQLite" : "PostgreSQL"), \(options.messages) messages (POST + DELETE), \(options.clients) mailboxes, \(options.inflight) stored at a time, \(options.batch) writes per commit")
        print("per message: CPU \(Self.fmt(cpuUs)) µs (this process)\(server.map { ", \(Self.fmt($0.total * 1e6 / n)) µs (database server: \(Self.fmt($0.backends * 1e6 / n)) its backends, \(Self.fmt($0.background * 1e6 / n)) the rest)" } ?? ""), wall \(Self.fmt(wallUs)) µs, written \(Self.fmt(kib, 2)) KiB; \(commits) commits\(options.reads ? ", \(delivered) read back" : "")")
        print("per tenth of the run (CPU, written, wall per message): " + lines.joined(separator: "; "))
        print("wall per message in commits \(Self.fmt(commitSeconds * 1e6 / n)) µs, in checkpoints \(Self.fmt(checkpointSeconds * 1e6 / n)) µs")
        print("summary mode=store messages=\(options.messages) cpu_us_per_msg=\(Self.fmt(cpuUs)) wall_us_per_msg=\(Self.fmt(wallUs)) written_kib_per_msg=\(Self.fmt(kib, 2)) server_cpu_us_per_msg=\(serverUs.map { Self.fmt($0) } ?? "-") server_backend_us_per_msg=\(server.map { Self.fmt($0.backends * 1e6 / n) } ?? "-") commits=\(commits) commit_us_per_msg=\(Self.fmt(commitSeconds * 1e6 / n)) checkpoint_us_per_msg=\(Self.fmt(checkpointSeconds * 1e6 / n)) read_back=\(delivered) left=\(left)")
        return left == 0 && (!options.reads || delivered == options.messages)
    }

    private func makeTemporaryDirectory() -> String {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/yaok-relay-store-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) } ?? "\(base)/yaok-relay-store-\(getpid())"
        }
    }

    private static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    private static func seconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    private static func fmt(_ value: Double, _ decimals: Int = 0) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        return decimals == 0 ? String(Int(rounded)) : String(rounded)
    }
}
