import Glibc

struct Options {
    enum Mode: String { case load, steady, store, carry }
    var mode: Mode = .load
    var clients = 1000
    var messages = 100_000
    var window = 8
    var rate = 1000.0
    var duration = 10.0
    var payloadMin = 200
    var payloadMax = 1000
    var lifetimeMinutes: UInt16 = 60
    var connectConcurrency = 64
    var timeout = 280.0
    var drain = 10.0
    var killAt: Double?
    var relayBinary: String?
    var data: String?
    var port: UInt16 = 0
    var relayArguments: [String] = []
    var connect: String?
    /// More relays (a cluster over one PostgreSQL): client i uses relay i mod their number.
    var moreConnects: [String] = []
    /// `--at F:CMD`: run CMD (sh -c) once F of the messages are ACCEPTED (kill a relay…).
    var hooks: [(fraction: Double, command: String)] = []
    /// `--offline F:CLIENT:S`: at F, disconnect CLIENT and keep it away S seconds.
    var offline: [(fraction: Double, client: Int, seconds: Double)] = []
    var pin: String?
    /// `--relay-pid PID`: relays already running whose CPU and bytes written to count.
    var relayPids: [pid_t] = []
    var seed: UInt64 = 0
    var quiet = false
    /// `store`: writes per commit, packets stored at a time, and a PostgreSQL database.
    var batch = 100
    var inflight = 8000
    var postgres: String?
    /// `store --reads`: read each commit's packets back; `--server-pid`: count its CPU.
    var reads = false
    var serverPid: pid_t?

    static let usage = """
        usage: yaok-relay-load [load|steady] [options]
          load    every client posts its share of --messages to random recipients, at most
                  --window unanswered POSTs each; receivers DELETE what they get; checks that
                  each message is delivered, none lost, none twice in a session
          steady  --rate messages/s for --duration s from random clients; latency percentiles
          store   the relay's store alone (no TLS, no sessions), in the load's pattern: CPU and
                  bytes written per message; --batch N writes per commit (100), --inflight N
                  stored at a time (8000), --data DIR (default: a new one under TMPDIR),
                  --postgres CONNINFO for PostgreSQL instead of SQLite, --reads to read each
                  commit's packets back as a relay on a shared store delivers them,
                  --server-pid PID to count the database server's CPU (PID and its children:
                  its backends, and the rest: WAL writer, checkpointer, autovacuum)
          carry   a take into a full carry store on PostgreSQL (--postgres CONNINFO, required):
                  µs per take at the 2,000-packet cap, three shapes of store

        the relay (one of):
          --relay-binary PATH     start yaok-relay (--self-signed) and own it
            --data DIR            its data directory (default: a new one under /tmp)
            --port N              its port (default: any free port, kept across restarts)
            --relay-arg ARG       pass ARG to yaok-relay (repeatable), e.g. --relay-arg --rate-limit=1000000
            --kill-relay-at F     (load) SIGKILL the relay once F (0..1) of the messages are ACCEPTED,
                                  restart it on the same data and port
          --connect HOST:PORT --pin HEX   a relay already running; repeat --connect for a
                                  cluster (one PostgreSQL): client i uses relay i mod N,
                                  so with two clients client 0 is on the first relay
            --relay-pid PID       (repeatable) count that relay process's CPU and bytes
                                  written (/proc/PID) in the report
            --server-pid PID      (load) also the CPU of the PostgreSQL server the relays
                                  use (its postmaster's PID: it and its children)
          --at F:CMD              run CMD (sh -c) once F of the messages are ACCEPTED
          --offline F:CLIENT:S    at F, disconnect client CLIENT and keep it offline S s

        options:
          --clients N (1000)  --messages N (100000)  --window N (8)
          --rate N (1000)  --duration S (10)  --drain S (10: steady, wait for late deliveries)
          --payload MIN-MAX (200-1000)  --connect-concurrency N (64)
          --timeout S (280: give up, report what was lost, exit 1)  --seed N  --quiet
        """

    static func parse(_ arguments: [String]) throws -> Options {
        var o = Options()
        var i = 0
        func value() throws -> String {
            i += 1
            guard i < arguments.count else { throw ToolError("\(arguments[i - 1]) needs a value") }
            return arguments[i]
        }
        func number<T: LosslessStringConvertible>(_ type: T.Type) throws -> T {
            let name = arguments[i]
            let text = try value()
            guard let v = T(text) else { throw ToolError("\(name): '\(text)' is not a valid number") }
            return v
        }
        while i < arguments.count {
            let a = arguments[i]
            switch a {
            case "load": o.mode = .load
            case "steady": o.mode = .steady
            case "store": o.mode = .store
            case "carry": o.mode = .carry
            case "--batch": o.batch = try number(Int.self)
            case "--inflight": o.inflight = try number(Int.self)
            case "--postgres": o.postgres = try value()
            case "--reads": o.reads = true
            case "--server-pid": o.serverPid = try number(pid_t.self)
            case "--clients": o.clients = try number(Int.self)
            case "--messages": o.messages = try number(Int.self)
            case "--window": o.window = try number(Int.self)
            case "--rate": o.rate = try number(Double.self)
            case "--duration": o.duration = try number(Double.self)
            case "--drain": o.drain = try number(Double.self)
            case "--timeout": o.timeout = try number(Double.self)
            case "--connect-concurrency": o.connectConcurrency = try number(Int.self)
            case "--lifetime-minutes": o.lifetimeMinutes = try number(UInt16.self)
            case "--seed": o.seed = try number(UInt64.self)
            case "--kill-relay-at": o.killAt = try number(Double.self)
            case "--relay-binary": o.relayBinary = try value()
            case "--data": o.data = try value()
            case "--port": o.port = try number(UInt16.self)
            case "--relay-arg": o.relayArguments.append(try value())
            case "--connect":
                if o.connect == nil { o.connect = try value() } else { o.moreConnects.append(try value()) }
            case "--at":
                let text = try value()
                guard let colon = text.firstIndex(of: ":"), let f = Double(text[..<colon]) else {
                    throw ToolError("--at wants F:COMMAND, e.g. 0.5:'kill -9 1234'")
                }
                o.hooks.append((f, String(text[text.index(after: colon)...])))
            case "--offline":
                let parts = try value().split(separator: ":")
                guard parts.count == 3, let f = Double(parts[0]), let c = Int(parts[1]), let s = Double(parts[2]) else {
                    throw ToolError("--offline wants F:CLIENT:SECONDS")
                }
                o.offline.append((f, c, s))
            case "--pin": o.pin = try value()
            case "--relay-pid": o.relayPids.append(try number(pid_t.self))
            case "--quiet": o.quiet = true
            case "--payload":
                let parts = try value().split(separator: "-")
                guard parts.count == 2, let lo = Int(parts[0]), let hi = Int(parts[1]), 1 <= lo, lo <= hi, hi <= 16_000 else {
                    throw ToolError("--payload wants MIN-MAX bytes, e.g. 200-1000")
                }
                o.payloadMin = lo
                o.payloadMax = hi
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                throw ToolError("Unknown argument \(a)\n\(usage)")
            }
            i += 1
        }
        guard o.clients >= 2 else { throw ToolError("--clients must be at least 2") }
        guard o.window >= 1 else { throw ToolError("--window must be at least 1") }
        if o.mode == .carry {
            guard o.postgres != nil else { throw ToolError("carry needs --postgres CONNINFO") }
            return o
        }
        if o.mode == .store {
            guard o.batch >= 2, o.inflight >= 0, o.messages >= 1 else { throw ToolError("store needs --batch ≥ 2 and --messages ≥ 1") }
            return o
        }
        guard (o.relayBinary == nil) != (o.connect == nil) else {
            throw ToolError("Give either --relay-binary or --connect HOST:PORT --pin HEX\n\(usage)")
        }
        if o.connect != nil && o.pin == nil { throw ToolError("--connect needs --pin") }
        if let k = o.killAt {
            guard o.relayBinary != nil, o.mode == .load, k > 0, k < 1 else {
                throw ToolError("--kill-relay-at F needs load mode, --relay-binary and 0 < F < 1")
            }
        }
        return o
    }
}
