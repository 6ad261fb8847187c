import Glibc
import YaOKSystem
import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKTLS

/// What the tool knows about one message, from its first POST to its last DELIVER.
struct Message {
    var id: MessageID
    var sender: Int32
    var recipient: Int32
    var sum: UInt64 = 0
    var firstSentNs: UInt64 = 0
    var lastPostNs: UInt64 = 0
    var acceptedNs: UInt64 = 0
    var firstDeliveredNs: UInt64 = 0
    var lastDeliveredNs: UInt64 = 0
    var deliveries: UInt32 = 0
    var posts: UInt32 = 0
    var acceptedBeforeKill = false
    var failed = false
}

/// The single-threaded epoll loop that drives every client, the message ledger, the relay
/// child process, and the report.
final class Runner {
    let options: Options
    let poller = Poller()
    var tlsContext: TLSContext!
    var host: UInt32 = 0  // host byte order
    var hostName = "127.0.0.1"
    var port: UInt16 = 0
    /// Every relay's port (more than one: a cluster); client i connects to ports[i % count].
    var ports: [UInt16] = []
    private var hooksRun = 0
    private var offlineRun = 0
    var relay: RelayProcess?
    var clients: [Client] = []
    var messages: [Message] = []
    var idIndex: [MessageID: Int32] = [:]
    /// Packet bytes of messages not yet ACCEPTED (kept for re-POSTs).
    var packets: [Int32: [UInt8]] = [:]
    var rng: FastRandom
    var dirty: [Int] = []

    // Counters.
    var started = false
    var inflightTotal = 0
    var acceptedCount = 0
    var deliveredDistinct = 0
    var redeliveriesAcrossSessions = 0
    var repeatsAfterRepost = 0
    var duplicatesInSession = 0
    var corrupted = 0
    var misrouted = 0
    var unknownIDs = 0
    var failedCount = 0
    var reposts = 0
    var deletesSent = 0
    var disconnects = 0
    var disconnectsWhileReady = 0
    var connectFailures = 0
    var sessionErrors: [String: Int] = [:]
    var requestErrors: [String: Int] = [:]
    var faults: [String] = []
    var faultCount = 0
    var disconnectReasons: [String: Int] = [:]
    var latencies: [UInt64] = []

    // Times (monotonic ns).
    var runStartNs: UInt64 = 0
    var connectedNs: UInt64 = 0
    var postStartNs: UInt64 = 0
    var lastAcceptNs: UInt64 = 0
    var lastFirstDeliveryNs: UInt64 = 0
    var steadyEndNs: UInt64 = 0

    // Kill and restart.
    var killed = false
    var killAtAccepted = 0
    var killNs: UInt64 = 0
    var restartSeconds = 0.0
    var relayDiedUnexpectedly: String?
    var relayAtStart = (cpu: 0.0, written: 0)
    var deletedAtStart = 0
    /// `--server-pid`: the database server's CPU when the traffic started.
    var serverAtStart = ServerCPU()
    var toolCPUAtStart = 0.0
    /// The directory the tool made for the relay's data and logs (no --data): removed at
    /// the end of a run that passed.
    var temporaryDirectory: String?

    /// A sample every `intervalNs` of the traffic phase: how throughput and the relay's
    /// bytes written move over a long run (a store that slows down as it fills shows here).
    struct Interval {
        var ns: UInt64
        var accepted: Int
        var delivered: Int
        var written: Int
        /// Packets the relay had deleted (its `stats`, refreshed each second; 0 when the
        /// tool did not start the relay): DELETEs go at most at the address's budget.
        var deleted: Int
        /// Every client had its window nearly full throughout (not the run's tail, when
        /// clients that posted their share leave the relay less to do).
        var busy: Bool
    }
    static let intervalNs: UInt64 = 5_000_000_000
    var intervals: [Interval] = []

    init(options: Options) {
        self.options = options
        rng = FastRandom(seed: options.seed != 0 ? options.seed : UInt64.random(in: 1...UInt64.max))
    }

    func say(_ text: String) {
        print(text)
        fflush(nil)
    }

    // MARK: Setup

    func setUp() throws {
        if let binary = options.relayBinary {
            let data: String
            if let d = options.data {
                data = d
            } else {
                let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
                var template = Array("\(base)/yaok-relay-load-XXXXXX".utf8CString)
                guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
                    throw ToolError("mkdtemp: \(Socket.reason(errno))")
                }
                let made = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                temporaryDirectory = made
                data = made + "/data"
            }
            let logs = data.hasSuffix("/") ? String(data.dropLast()) + ".logs" : data + ".logs"
            mkdir(logs, 0o755)
            let relay = RelayProcess(binary: binary, dataDirectory: data, logDirectory: logs,
                                     port: options.port, extraArguments: options.relayArguments)
            let seconds = try relay.start()
            self.relay = relay
            port = relay.port
            say("relay: \(binary) pid \(relay.pid), listening on 127.0.0.1:\(port) after \(fmt(seconds, 2)) s; data \(data); logs \(logs)")
            tlsContext = try TLSContext.client(pin: try pinBytes(relay.pin), caFile: nil)
        } else if let connect = options.connect, let pin = options.pin {
            guard let colon = connect.lastIndex(of: ":"), let p = UInt16(connect[connect.index(after: colon)...]) else {
                throw ToolError("--connect wants HOST:PORT")
            }
            hostName = String(connect[..<colon])
            port = p
            ports = [p]
            for more in options.moreConnects {
                guard let colon = more.lastIndex(of: ":"), let p = UInt16(more[more.index(after: colon)...]),
                      String(more[..<colon]) == hostName else {
                    throw ToolError("each --connect wants HOST:PORT on the same host")
                }
                ports.append(p)
            }
            tlsContext = try TLSContext.client(pin: try pinBytes(pin), caFile: nil)
        }
        guard let address = Socket.parseIPv4(hostName) else { throw ToolError("\(hostName) is not an IPv4 address") }
        host = address
        for i in 0..<options.clients { clients.append(try Client(index: i, runner: self)) }
        if options.mode == .load {
            messages.reserveCapacity(options.messages)
            idIndex.reserveCapacity(options.messages)
            for c in clients { c.queue.reserveCapacity(options.messages / options.clients + 1) }
            for i in 0..<options.messages {
                let sender = i % options.clients
                _ = newMessage(sender: sender)
            }
        }
    }

    private func randomRecipient(notEqualTo sender: Int) -> Int {
        let r = Int(rng.next() % UInt64(options.clients - 1))
        return r >= sender ? r + 1 : r
    }

    /// A new message from `sender` to a random other client, queued at the sender.
    private func newMessage(sender: Int) -> Int32 {
        let index = Int32(messages.count)
        let id = MessageID.random()
        messages.append(Message(id: id, sender: Int32(sender), recipient: Int32(randomRecipient(notEqualTo: sender))))
        idIndex[id] = index
        clients[sender].queue.append(index)
        return index
    }

    /// The routed packet of `message` (made at its first POST; the same bytes for re-POSTs).
    private func packet(for message: Int32) -> [UInt8] {
        if let p = packets[message] { return p }
        let length = options.payloadMin + Int(rng.next() % UInt64(options.payloadMax - options.payloadMin + 1))
        var payload = [UInt8](repeating: 0, count: length)
        var i = 0
        while i < length {
            var word = rng.next()
            for _ in 0..<8 where i < length {
                payload[i] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                i += 1
            }
        }
        let header = try! RoutedHeader(type: .message, hopLimit: 8, messageID: messages[Int(message)].id,
                                       createdMs: Clock.wallMs(), lifetimeMinutes: options.lifetimeMinutes,
                                       routingTag: RoutingTag(value: rng.next()))
        let bytes = try! Packet.routed(header, payload: payload).encode()
        messages[Int(message)].sum = checksum(bytes)
        packets[message] = bytes
        return bytes
    }

    // MARK: The loop

    func markDirty(_ client: Client) {
        if !client.needsFlush {
            client.needsFlush = true
            dirty.append(client.index)
        }
    }

    private var lastScanNs: UInt64 = 0
    private var lastRelayCheckNs: UInt64 = 0
    private var lastProgressNs: UInt64 = 0

    /// One round: wait for events, serve them, run timers, flush what was written.
    func turn(timeoutMs: Int32) {
        poller.wait(timeoutMs: timeoutMs) { token in
            clients[Int(token)].onEvent(now: Clock.now())
        }
        let now = Clock.now()
        if now - lastScanNs >= 5_000_000 {
            lastScanNs = now
            scan(now: now)
        }
        if options.mode == .steady && started && steadyEndNs == 0 { steadyTick(now: now) }
        if let relay, now - lastRelayCheckNs >= 100_000_000 {
            lastRelayCheckNs = now
            if let status = relay.exitedUnexpectedly() {
                relayDiedUnexpectedly = "the relay exited by itself with wait status \(status) (see its log)"
            }
        }
        if started && intervalsOpen, now - (intervals.last?.ns ?? postStartNs) >= Self.intervalNs {
            let busy = options.mode == .load && lowestInflightInInterval * 10 >= options.clients * options.window * 9
            intervals.append(Interval(ns: now, accepted: acceptedCount, delivered: deliveredDistinct,
                                      written: relayFigures().written - relayAtStart.written,
                                      deleted: relay.flatMap { jsonInt($0.stats(), "deleted") } ?? 0, busy: busy))
            lowestInflightInInterval = .max
        }
        if started && intervalsOpen {
            lowestInflightInInterval = min(lowestInflightInInterval, inflightTotal)
        }
        if !options.quiet && started && now - lastProgressNs >= 5_000_000_000 {
            lastProgressNs = now
            let ready = clients.reduce(0) { $0 + ($1.isReady ? 1 : 0) }
            say("  t=\(fmt(Double(now - postStartNs) / 1e9, 1)) s: accepted \(acceptedCount), delivered \(deliveredDistinct), in flight \(inflightTotal), clients ready \(ready)/\(clients.count), disconnects \(disconnects)")
        }
        let batch = dirty
        dirty.removeAll(keepingCapacity: true)
        for i in batch {
            let c = clients[i]
            c.flushDeletes(now: now)
            c.flushSafely(now: now)
            c.needsFlush = false
        }
    }

    /// Connects idle clients (at most `connectConcurrency` handshakes at once), times out
    /// stuck handshakes, sends keepalives, resumes clients whose hold expired.
    private func scan(now: UInt64) {
        var connecting = 0
        for c in clients where c.isConnectingOrHandshaking {
            if now - c.stateSinceNs > 10_000_000_000 {
                c.fail("no session after 10 s", now: now)
            } else {
                connecting += 1
            }
        }
        for c in clients {
            if c.state == .idle {
                if connecting < options.connectConcurrency && now >= c.retryAtNs {
                    connecting += 1
                    c.connect(host: host, port: ports.isEmpty ? port : ports[c.index % ports.count], now: now)
                }
            } else if c.isReady {
                if now - c.lastSendNs > 45_000_000_000 { c.sendKeepalive(now: now); markDirty(c) }
                if c.holdUntilNs != 0 && now >= c.holdUntilNs {
                    c.holdUntilNs = 0
                    fillWindow(c, now: now)
                }
            }
        }
    }

    // MARK: Client callbacks

    func clientReady(_ c: Client, now: UInt64) {
        if started { fillWindow(c, now: now) }
    }

    func fillWindow(_ c: Client, now: UInt64) {
        guard started, c.isReady, c.holdUntilNs == 0 else { return }
        let window = options.mode == .load ? options.window : Int.max
        while c.inflightCount < window && c.queueHead < c.queue.count {
            let m = c.queue[c.queueHead]
            c.queueHead += 1
            post(m, from: c, now: now)
        }
        if c.queueHead > 4096 && c.queueHead * 2 > c.queue.count {
            c.queue.removeFirst(c.queueHead)
            c.queueHead = 0
        }
    }

    private func post(_ m: Int32, from c: Client, now: UInt64) {
        let bytes = packet(for: m)
        if messages[Int(m)].firstSentNs == 0 {
            messages[Int(m)].firstSentNs = now
        } else {
            reposts += 1
        }
        messages[Int(m)].lastPostNs = now
        messages[Int(m)].posts += 1
        c.post(m, packet: bytes, to: clients[Int(messages[Int(m)].recipient)], now: now)
        markDirty(c)
    }

    func accepted(_ m: Int32, by c: Client, now: UInt64) {
        if messages[Int(m)].acceptedNs == 0 {
            messages[Int(m)].acceptedNs = now
            acceptedCount += 1
            lastAcceptNs = now
            packets[m] = nil
        }
        runHooks(now: now)
        if let k = options.killAt, !killed, Double(acceptedCount) >= k * Double(options.messages) {
            killAndRestart(now: now)
            return
        }
        fillWindow(c, now: now)
    }

    func delivered(_ packet: [UInt8], to c: Client, now: UInt64) {
        guard let header = try? RoutedHeader.parse(packet).header else {
            corrupted += 1
            fault("client \(c.index) got a DELIVER whose packet does not parse")
            return
        }
        c.pendingDeletes.append(StoredPacketRef(mailbox: c.mailbox, messageID: header.messageID))
        markDirty(c)
        guard let index = idIndex[header.messageID] else {
            unknownIDs += 1
            fault("client \(c.index) got message \(header.messageID), which nobody posted")
            return
        }
        let i = Int(index)
        if Int(messages[i].recipient) != c.index {
            misrouted += 1
            fault("message \(header.messageID) for client \(messages[i].recipient) was delivered to client \(c.index)")
            return
        }
        if checksum(packet) != messages[i].sum {
            corrupted += 1
            fault("message \(header.messageID) was delivered with different bytes")
        }
        if !c.sessionSeen.insert(header.messageID).inserted {
            if messages[i].lastPostNs > messages[i].lastDeliveredNs {
                repeatsAfterRepost += 1  // posted again (no ACCEPTED seen) after the recipient deleted it
            } else {
                duplicatesInSession += 1
                fault("message \(header.messageID) delivered twice in one session of client \(c.index) (no re-POST in between)")
            }
        } else if messages[i].deliveries > 0 {
            redeliveriesAcrossSessions += 1
        }
        if messages[i].deliveries == 0 {
            deliveredDistinct += 1
            lastFirstDeliveryNs = now
            messages[i].firstDeliveredNs = now
            latencies.append(now - messages[i].firstSentNs)
        }
        messages[i].deliveries += 1
        messages[i].lastDeliveredNs = now
    }

    func requestError(_ e: RelayErrorFrame, message m: Int32, client c: Client, now: UInt64) {
        requestErrors["\(e.code)", default: 0] += 1
        switch e.code {
        case .rateLimited, .mailboxFull, .unavailable:
            c.requeue(m)
            let wait = max(Double(e.retryAfterSeconds), 0.2)
            c.holdUntilNs = now + UInt64(wait * 1e9)
        default:
            messages[Int(m)].failed = true
            failedCount += 1
            fault("POST of \(messages[Int(m)].id) refused: \(e.code) \(e.message)")
        }
    }

    func noteSessionError(_ e: RelayErrorFrame) {
        sessionErrors["\(e.code): \(e.message)", default: 0] += 1
        disconnects += 1
    }

    func noteDisconnect(_ c: Client, reason: String, wasReady: Bool) {
        disconnects += 1
        if wasReady { disconnectsWhileReady += 1 }
        let key = reason.count > 90 ? String(reason.prefix(90)) + "…" : reason
        disconnectReasons[key, default: 0] += 1
    }

    func noteConnectFailure(_ c: Client, reason: String) {
        connectFailures += 1
        disconnectReasons["connect: \(reason)", default: 0] += 1
    }

    func noteProtocolFault(_ text: String) { fault(text) }

    private func fault(_ text: String) {
        faultCount += 1
        if faults.count < 20 { faults.append(text) }
    }

    // MARK: Hooks (a cluster's test: kill a relay, restart the database, a client away)

    private func runHooks(now: UInt64) {
        let done = Double(acceptedCount) / Double(max(options.messages, 1))
        let hooks = options.hooks.sorted { $0.fraction < $1.fraction }
        while hooksRun < hooks.count && done >= hooks[hooksRun].fraction {
            let hook = hooks[hooksRun]
            hooksRun += 1
            say("  at \(acceptedCount) accepted: \(hook.command)")
            let status = system(hook.command)
            say("  … exit status \(status)")
        }
        let away = options.offline.sorted { $0.fraction < $1.fraction }
        while offlineRun < away.count && done >= away[offlineRun].fraction {
            let o = away[offlineRun]
            offlineRun += 1
            guard o.client >= 0 && o.client < clients.count else { continue }
            say("  at \(acceptedCount) accepted: client \(o.client) goes offline for \(fmt(o.seconds, 1)) s")
            let c = clients[o.client]
            c.fail("offline on purpose", now: now, counted: false)
            c.retryAtNs = now + UInt64(o.seconds * 1e9)
        }
    }

    // MARK: Kill and restart

    private func killAndRestart(now: UInt64) {
        guard let relay else { return }
        killed = true
        killAtAccepted = acceptedCount
        for i in messages.indices where messages[i].acceptedNs != 0 { messages[i].acceptedBeforeKill = true }
        relay.kill9()
        killNs = Clock.now()
        say("  SIGKILL the relay at \(acceptedCount) accepted (\(fmt(100 * Double(acceptedCount) / Double(options.messages), 1)) %), peak RSS \(relay.peakRSSKiB.last.map { fmt(Double($0) / 1024, 1) } ?? "?") MiB; restarting on port \(port)")
        do {
            restartSeconds = try relay.start()
            say("  relay restarted (pid \(relay.pid)) in \(fmt(restartSeconds, 2)) s")
        } catch {
            relayDiedUnexpectedly = "restart failed: \(error)"
        }
    }

    // MARK: Steady mode

    private var generated = 0

    private func steadyTick(now: UInt64) {
        let elapsed = Double(now - postStartNs) / 1e9
        let total = Int(options.rate * options.duration)
        let due = min(total, Int(options.rate * elapsed))
        while generated < due {
            var sender = Int(rng.next() % UInt64(clients.count))
            var tries = 0
            while !clients[sender].isReady && tries < 20 {
                sender = Int(rng.next() % UInt64(clients.count))
                tries += 1
            }
            let m = newMessage(sender: sender)
            generated += 1
            fillWindow(clients[sender], now: now)
            _ = m
        }
        if generated >= total { steadyEndNs = now }
    }

    // MARK: Running

    func run() -> Bool {
        runStartNs = Clock.now()
        let deadline = runStartNs + UInt64(options.timeout * 1e9)
        // Phase 1: every client connected, authenticated and subscribed.
        while clients.contains(where: { !$0.isReady }) {
            turn(timeoutMs: 5)
            if let r = relayDiedUnexpectedly { say("FAILED: \(r)"); return false }
            if Clock.now() > deadline { say("FAILED: not all clients connected within --timeout"); return false }
        }
        connectedNs = Clock.now()
        say("connected: \(clients.count) clients (TLS 1.3, AUTH, SUBSCRIBE) in \(fmt(Double(connectedNs - runStartNs) / 1e9, 2)) s, \(connectFailures) failed attempts")
        // Phase 2: traffic.
        started = true
        relayAtStart = relayFigures()
        deletedAtStart = relay.flatMap { jsonInt($0.stats(), "deleted") } ?? 0
        if let pid = options.serverPid { serverAtStart = ServerCPU.of(pid) }
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        toolCPUAtStart = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        postStartNs = Clock.now()
        lastProgressNs = postStartNs
        for c in clients { fillWindow(c, now: postStartNs) }
        var timedOut = false
        while true {
            turn(timeoutMs: options.mode == .steady ? 1 : 5)
            if let r = relayDiedUnexpectedly { say("FAILED: \(r)"); break }
            let now = Clock.now()
            if now > deadline { timedOut = true; break }
            if options.mode == .load {
                let needed = options.messages - failedCount
                if acceptedCount >= needed && deliveredDistinct >= needed { break }
            } else if steadyEndNs != 0 {
                if deliveredDistinct + failedCount >= messages.count && acceptedCount + failedCount >= messages.count { break }
                if now - steadyEndNs > UInt64(options.drain * 1e9) { timedOut = true; break }
            }
        }
        let endNs = Clock.now()
        intervalsOpen = false
        // Settle: send the last DELETEs, catch late duplicates, let the relay commit them.
        let settleUntil = Clock.now() + 1_500_000_000
        while Clock.now() < settleUntil { turn(timeoutMs: 5) }
        // Wait for the relay to delete what is left: at most 8 s without progress (its
        // per-address DELETE budget paces the deletes of clients sharing an address, so a
        // backlog drains at that rate, after the POSTs are all in).
        var storedAfter: Int?
        var drained: (packets: Int, seconds: Double)?
        if let relay, relayDiedUnexpectedly == nil {
            let drainStart = Clock.now()
            var first: Int?, lowest = Int.max, lastProgress = drainStart
            while Clock.now() - lastProgress < 8_000_000_000 {
                if let s = jsonInt(relay.stats(), "stored") {
                    storedAfter = s
                    if first == nil { first = s }
                    if s < lowest { lowest = s; lastProgress = Clock.now() }
                    if s == 0 { break }
                }
                let until = Clock.now() + 1_000_000_000
                while Clock.now() < until { turn(timeoutMs: 5) }
            }
            if let first, let storedAfter, first > storedAfter {
                drained = (first - storedAfter, Double(lastProgress - drainStart) / 1e9)
            }
        }
        return report(endNs: endNs, timedOut: timedOut, storedAfter: storedAfter, drained: drained)
    }

    /// Sampling intervals until the traffic phase ends.
    private var intervalsOpen = true
    private var lowestInflightInInterval = Int.max

    /// The relays' CPU seconds and bytes written so far: the tool's own child (with what the
    /// processes it killed had done), or the `--relay-pid` ones.
    func relayFigures() -> (cpu: Double, written: Int) {
        if let relay {
            var cpu = relay.cpuSeconds.reduce(0, +), written = relay.writtenBytes.reduce(0, +)
            if relay.pid > 0 {
                cpu += relay.currentCPUSeconds()
                written += relay.currentWrittenBytes()
            }
            return (cpu, written)
        }
        return (options.relayPids.reduce(0) { $0 + ProcessFigures.cpuSeconds($1) },
                options.relayPids.reduce(0) { $0 + ProcessFigures.writtenBytes($1) })
    }

    /// Stops the relay; removes the temporary directory if the run passed (a failed run's
    /// relay log is kept, and its path printed).
    func shutDown(passed: Bool) -> Int32? {
        for c in clients { c.fail("done", now: Clock.now(), counted: false) }
        let status = relay?.stop()
        if let temporaryDirectory {
            if passed { removeTree(temporaryDirectory) } else { say("kept for a look: \(temporaryDirectory)") }
        }
        return status
    }

    // MARK: Report

    private func report(endNs: UInt64, timedOut: Bool, storedAfter: Int?, drained: (packets: Int, seconds: Double)?) -> Bool {
        let total = messages.count
        let lost = total - failedCount - deliveredDistinct
        let acceptedSpan = Double(max(lastAcceptNs, postStartNs + 1) - postStartNs) / 1e9
        let deliveredSpan = Double(max(lastFirstDeliveryNs, postStartNs + 1) - postStartNs) / 1e9
        let allSpan = max(acceptedSpan, deliveredSpan)
        let acceptedRate = Double(acceptedCount) / acceptedSpan
        let deliveredRate = Double(deliveredDistinct) / deliveredSpan
        let bothRate = Double(min(acceptedCount, deliveredDistinct)) / allSpan
        latencies.sort()
        func pct(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return .nan }
            let i = min(latencies.count - 1, Int((p / 100 * Double(latencies.count)).rounded(.up)) - 1)
            return Double(latencies[max(0, i)]) / 1e6
        }
        let p50 = pct(50), p90 = pct(90), p99 = pct(99), pmax = latencies.last.map { Double($0) / 1e6 } ?? .nan
        let sessions = clients.reduce(0) { $0 + $1.sessions }
        var rss = relay?.peakRSSKiB ?? []
        if let relay, relay.pid > 0 { rss.append(relay.currentPeakRSSKiB()) }
        let peakRSS = rss.max() ?? 0
        let relayNow = relayFigures()
        let measured = relay != nil || !options.relayPids.isEmpty
        let relayCPU = relayNow.cpu - relayAtStart.cpu
        let server = options.serverPid.map { ServerCPU.of($0) - serverAtStart }
        let written = relayNow.written - relayAtStart.written
        let writtenPerMessage = Double(written) / Double(max(acceptedCount, 1))
        // Full intervals only: accepted per second in each, and bytes written per message.
        var previous = Interval(ns: postStartNs, accepted: 0, delivered: 0, written: 0, deleted: deletedAtStart, busy: false)
        var rates: [Double] = [], perMessage: [Double] = [], busyRates: [Double] = []
        var deliveredRates: [Double] = [], deletedRates: [Double] = []
        for interval in intervals {
            let seconds = Double(interval.ns - previous.ns) / 1e9
            let accepted = interval.accepted - previous.accepted
            rates.append(Double(accepted) / seconds)
            deliveredRates.append(Double(interval.delivered - previous.delivered) / seconds)
            deletedRates.append(Double(interval.deleted - previous.deleted) / seconds)
            if interval.busy { busyRates.append(Double(accepted) / seconds) }
            perMessage.append(accepted > 0 ? Double(interval.written - previous.written) / Double(accepted) / 1024 : .nan)
            previous = interval
        }
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        let toolCPU = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6 - toolCPUAtStart

        say("")
        say("== yaok-relay-load \(options.mode.rawValue): \(clients.count) clients, \(total) messages, payload \(options.payloadMin)-\(options.payloadMax) B" + (options.mode == .load ? ", window \(options.window) per client" : ", \(fmt(options.rate, 0))/s for \(fmt(options.duration, 1)) s"))
        if options.mode == .load {
            say("accepted (durable):  \(acceptedCount) in \(fmt(acceptedSpan, 2)) s = \(fmt(acceptedRate, 0)) msgs/s")
            say("delivered (distinct): \(deliveredDistinct) in \(fmt(deliveredSpan, 2)) s = \(fmt(deliveredRate, 0)) msgs/s")
            say("accepted and delivered: \(fmt(bothRate, 0)) msgs/s (\(min(acceptedCount, deliveredDistinct)) in \(fmt(allSpan, 2)) s)")
        } else {
            let span = Double(max(steadyEndNs, postStartNs + 1) - postStartNs) / 1e9
            say("offered: \(generated) in \(fmt(span, 2)) s = \(fmt(Double(generated) / span, 0)) msgs/s; accepted \(acceptedCount), delivered \(deliveredDistinct)")
        }
        say("latency POST→DELIVER: p50 \(fmt(p50, 2)) ms, p90 \(fmt(p90, 2)) ms, p99 \(fmt(p99, 2)) ms, max \(fmt(pmax, 2)) ms (\(latencies.count) samples)")
        say("lost: \(lost); duplicates within a session: \(duplicatesInSession); corrupted: \(corrupted); misrouted: \(misrouted); unknown IDs: \(unknownIDs); refused for good: \(failedCount)")
        say("re-deliveries in a later session (not yet DELETEd when the session ended; dropped by ID): \(redeliveriesAcrossSessions); repeats after a re-POST: \(repeatsAfterRepost); re-POSTs: \(reposts); DELETEs sent: \(deletesSent)")
        if killed {
            let before = messages.filter { $0.acceptedBeforeKill }
            let deliveredBefore = before.filter { $0.deliveries > 0 }.count
            say("SIGKILL: at \(killAtAccepted) accepted; restart took \(fmt(restartSeconds, 2)) s; ACCEPTED before the kill and delivered: \(deliveredBefore)/\(before.count)")
        }
        say("connections: \(clients.count) clients, \(sessions) sessions (\(sessions - clients.count) after a reconnect), \(disconnects) disconnects (\(disconnectsWhileReady) of ready sessions), \(connectFailures) failed connects")
        if !disconnectReasons.isEmpty {
            let top = disconnectReasons.sorted { $0.value > $1.value }.prefix(6).map { "\($0.value)× \($0.key)" }
            say("  disconnect reasons: " + top.joined(separator: "; "))
        }
        if !sessionErrors.isEmpty { say("  session ERRORs: " + sessionErrors.sorted { $0.value > $1.value }.map { "\($0.value)× \($0.key)" }.joined(separator: "; ")) }
        if !requestErrors.isEmpty { say("  request ERRORs: " + requestErrors.sorted { $0.value > $1.value }.map { "\($0.value)× \($0.key)" }.joined(separator: "; ")) }
        if relay != nil {
            say("relay peak RSS (VmHWM): " + rss.map { "\(fmt(Double($0) / 1024, 1)) MiB" }.joined(separator: ", then ") + (rss.count > 1 ? " (per process)" : ""))
        }
        if measured {
            say("CPU during the traffic phase: relay \(fmt(relayCPU, 2)) s (\(fmt(relayCPU * 1e6 / Double(max(total, 1)), 0)) µs/message), this tool \(fmt(toolCPU, 2)) s; machine load average \(loadAverage())")
            if let server {
                say("database server CPU during the traffic phase: \(fmt(server.total, 2)) s (\(fmt(server.total * 1e6 / Double(max(total, 1)), 0)) µs/message; its backends \(fmt(server.backends * 1e6 / Double(max(total, 1)), 0)) µs/message)")
            }
            say("relay wrote \(fmt(Double(written) / 1048576, 1)) MiB to storage during the traffic phase: \(fmt(writtenPerMessage / 1024, 2)) KiB per message accepted (/proc/PID/io write_bytes)")
        }
        if !rates.isEmpty {
            say("per \(Self.intervalNs / 1_000_000_000) s interval, accepted/s: " + zip(rates, intervals).map { fmt($0.0, 0) + ($0.1.busy ? "" : "*") }.joined(separator: " ")
                + (intervals.contains { !$0.busy } ? " (*: windows not all full, e.g. the run's tail)" : ""))
            say("per interval, delivered/s: " + deliveredRates.map { fmt($0, 0) }.joined(separator: " "))
            if relay != nil { say("per interval, deleted by the relay/s: " + deletedRates.map { fmt($0, 0) }.joined(separator: " ")) }
            if measured { say("per interval, KiB written per message: " + perMessage.map { fmt($0, 1) }.joined(separator: " ")) }
        }
        if let drained {
            say("after the traffic the relay deleted \(drained.packets) more packets in \(fmt(drained.seconds, 1)) s (\(fmt(Double(drained.packets) / max(drained.seconds, 0.001), 0))/s: the DELETE backlog)")
        }
        if let storedAfter { say("relay stats after the run: stored \(storedAfter)" + (storedAfter == 0 ? " (every DELETE committed)" : " (packets left: DELETEs not all committed?)")) }
        for f in faults { say("  fault: \(f)") }
        if faultCount > faults.count { say("  … \(faultCount - faults.count) more faults") }

        var problems: [String] = []
        if timedOut { problems.append("timed out with \(total - acceptedCount - failedCount) not accepted and \(lost) not delivered") }
        if let r = relayDiedUnexpectedly { problems.append(r) }
        if lost > 0 && !timedOut { problems.append("\(lost) lost") }
        if duplicatesInSession > 0 { problems.append("\(duplicatesInSession) duplicated within a session") }
        if corrupted + misrouted + unknownIDs > 0 { problems.append("corrupted/misrouted/unknown deliveries") }
        if failedCount > 0 { problems.append("\(failedCount) POSTs refused for good") }
        if killed, messages.contains(where: { $0.acceptedBeforeKill && $0.deliveries == 0 }) {
            problems.append("messages ACCEPTED before the SIGKILL were never delivered")
        }
        say("summary mode=\(options.mode.rawValue) clients=\(clients.count) messages=\(total) accepted_per_s=\(fmt(acceptedRate, 0)) delivered_per_s=\(fmt(deliveredRate, 0)) both_per_s=\(fmt(bothRate, 0)) p50_ms=\(fmt(p50, 2)) p90_ms=\(fmt(p90, 2)) p99_ms=\(fmt(p99, 2)) max_ms=\(fmt(pmax, 2)) rss_mib=\(fmt(Double(peakRSS) / 1024, 1)) relay_cpu_s=\(measured ? fmt(relayCPU, 2) : "-") server_cpu_s=\(server.map { fmt($0.total, 2) } ?? "-") server_backend_cpu_s=\(server.map { fmt($0.backends, 2) } ?? "-") written_kib_per_msg=\(measured ? fmt(writtenPerMessage / 1024, 2) : "-") interval_min_per_s=\(busyRates.min().map { fmt($0, 0) } ?? "-") interval_last_per_s=\(busyRates.last.map { fmt($0, 0) } ?? "-") intervals_per_s=\(rates.isEmpty ? "-" : rates.map { fmt($0, 0) }.joined(separator: ",")) intervals_full=\(intervals.isEmpty ? "-" : intervals.map { $0.busy ? "1" : "0" }.joined(separator: ",")) intervals_kib_per_msg=\(measured && !perMessage.isEmpty ? perMessage.map { $0.isFinite ? fmt($0, 1) : "-" }.joined(separator: ",") : "-") tool_cpu_s=\(fmt(toolCPU, 2)) lost=\(lost) dup_in_session=\(duplicatesInSession) redelivered=\(redeliveriesAcrossSessions) sessions=\(sessions) seconds=\(fmt(Double(endNs - runStartNs) / 1e9, 1))")
        if problems.isEmpty {
            say("result: OK")
            return true
        }
        say("result: FAILED: " + problems.joined(separator: "; "))
        return false
    }
}

func loadAverage() -> String {
    String(readFile("/proc/loadavg").split(separator: " ").prefix(3).joined(separator: " "))
}

func pinBytes(_ hex: String) throws -> [UInt8] {
    guard hex.utf8.count == 64, let bytes = Hex.decode(hex) else { throw ToolError("The relay's pin '\(hex)' is not 64 hex digits") }
    return bytes
}

func fmt(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "-" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let r = (value * scale).rounded() / scale
    if decimals == 0 { return String(Int(r)) }
    var s = String(r)
    if let dot = s.firstIndex(of: ".") {
        let have = s.distance(from: dot, to: s.endIndex) - 1
        if have < decimals { s += String(repeating: "0", count: decimals - have) }
    }
    return s
}

/// The integer value of `"key": N` in a flat JSON object.
func jsonInt(_ json: String, _ key: String) -> Int? {
    let needle = Array("\"\(key)\"".utf8)
    let bytes = Array(json.utf8)
    guard bytes.count >= needle.count,
          let at = (0...(bytes.count - needle.count)).first(where: { Array(bytes[$0..<$0 + needle.count]) == needle }) else { return nil }
    var s = String(decoding: bytes[(at + needle.count)...], as: UTF8.self).drop { $0 == " " || $0 == ":" }
    s = s.prefix { $0.isNumber || $0 == "-" }
    return Int(s)
}
