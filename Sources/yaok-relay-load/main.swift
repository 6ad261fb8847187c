// yaok-relay-load: the relay's load test and benchmark client (issue 9). Opens many raw
// protocol clients (TLS 1.3, AUTH, SUBSCRIBE; no node) on one epoll thread and checks
// that every message is delivered, none twice in a session, also across a SIGKILL of the
// relay. `yaok-relay-load --help` for options.
import Glibc

signal(SIGPIPE, SIG_IGN)
// Ctrl-C or a timeout's SIGTERM: take the relay child down too, then exit.
for s in [SIGINT, SIGTERM] {
    signal(s) { sig in
        if relayPidForSignals > 0 { kill(relayPidForSignals, SIGKILL) }
        _exit(128 + sig)
    }
}

let options: Options
do {
    options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    printError("yaok-relay-load: \(error)")
    exit(2)
}

// Descriptors: one per client, plus the relay's own when it runs beside us.
var limit = rlimit()
getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
let wanted = rlim_t(options.clients + 256)
if limit.rlim_cur < wanted {
    limit.rlim_cur = min(wanted, limit.rlim_max)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    if limit.rlim_cur < wanted {
        printError("yaok-relay-load: \(options.clients) clients need about \(wanted) descriptors; the limit is \(limit.rlim_cur) (raise ulimit -n)")
        exit(2)
    }
}

func printError(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

if options.mode == .store {
    do {
        exit(try StoreBench(options: options).run() ? 0 : 1)
    } catch {
        print("FAILED: \(error)")
        exit(1)
    }
}

if options.mode == .carry, let conninfo = options.postgres {
    do {
        try CarryBench.run(conninfo: conninfo)
        exit(0)
    } catch {
        print("FAILED: \(error)")
        exit(1)
    }
}

let runner = Runner(options: options)
var ok = false
do {
    try runner.setUp()
    ok = runner.run()
} catch {
    print("FAILED: \(error)")
}
if let status = runner.shutDown(passed: ok), status != 0 {
    print("note: the relay exited with status \(status) on SIGTERM")
}
exit(ok ? 0 : 1)
