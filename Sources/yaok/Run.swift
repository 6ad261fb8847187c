import ArgumentParser
import Glibc
import YaOK

/// `yaok run`: the long-running peer. Unlocks once, enables the chosen transports, prints
/// what happens (messages received, status changes, contacts coming and going, transports),
/// and serves the other commands on the control socket until SIGINT or SIGTERM.
///
/// Auto-lock stays as the user set it: when it locks the node, the transports keep running
/// and the engine holds what arrives until the next unlock (a command sent through the
/// control socket then asks for the PIN).
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the peer: send and receive until stopped (Ctrl-C).",
        discussion: """
        Prints events as they happen: one line each, or one JSON object per line with --json. \
        While it runs, `send`, `history`, `retry`, `outbox` and `status` for the same home go \
        through it (over <home>/control.sock, owner-only).
        """)

    @OptionGroup var options: GlobalOptions

    @OptionGroup var transports: TransportOptions

    @OptionGroup var carrying: CarryOptions

    func run() throws {
        try Output.run(json: options.json) {
            ShutdownSignal.unblock()  // before any thread starts: they inherit the mask
            let out = EventOutput(json: options.json)
            let node = try options.openNode()
            defer { node.close() }
            try options.unlock(node)
            // Only now: until here Ctrl-C must still interrupt the PIN prompt.
            let stop = try ShutdownSignal.install()
            let name = try node.profile().name
            try carrying.apply(to: node)

            let printer = try EventPrinter(node: node, out: out)
            node.setEventHandler { event in printer.print(event) }

            // A failure to start (a port in use) ends `run`; Bluetooth that is absent does not.
            let started = try transports.start(on: node, out: out)

            let socketPath = ControlSocket.path(home: options.dataDirectory)
            let server = try ControlServer(path: socketPath) { request in Run.handle(request, node) }
            defer { server.stop() }

            let carryMode = try node.carryMode()
            out.line(.object([("event", .string("started")), ("name", .string(name)),
                              ("home", .string(options.dataDirectory)), ("control_socket", .string(socketPath)),
                              ("transports", .array(started.enabled.map { .string($0) })),
                              ("carry", .string(carryMode.name))] + started.fields)) {
                "\(name) is running (\(started.notes.isEmpty ? "no transports" : started.notes.joined(separator: "; "))"
                    + "; carrying for \(Run.carryLabel(carryMode))). Control socket \(socketPath). Ctrl-C to stop."
            }
            if let warnings = (try? node.diagnostics())?["warnings"]?.array {
                for case .string(let w) in warnings {
                    out.line(.object([("event", .string("warning")), ("message", .string(w))])) { "warning: \(w)" }
                }
            }

            let signal = stop.wait()
            server.stop()
            node.setEventHandler(nil)
            node.close()
            out.line(.object([("event", .string("stopped")), ("signal", .int(Int64(signal)))])) { "Stopped" }
        }
    }

    /// How `run` names a carry mode for people.
    static func carryLabel(_ mode: CarryMode) -> String {
        switch mode {
        case .anyone: return "anyone"
        case .contactsOnly: return "contacts only"
        case .off: return "nobody (off)"
        }
    }

    /// A control socket request, answered against the node (on the server's thread).
    static func handle(_ json: JSON, _ node: Node) -> JSON {
        do {
            let request = try PeerRequest(json: json)
            if request.needsKeys, try node.status().locked {
                guard let pin = json["pin"]?.string else { throw YaOKError(.locked) }
                try node.unlock(pin: pin)
            }
            return try request.perform(on: node)
        } catch {
            return ControlSocket.errorResponse(for: error)
        }
    }
}

/// Lines on stdout, whole and flushed, from any thread: JSON objects with --json, text
/// otherwise.
final class EventOutput: Sendable {
    let json: Bool
    private let lock = Locked(())
    /// Where lines go instead of stdout (tests).
    private let sink: (@Sendable (String) -> Void)?

    init(json: Bool, sink: (@Sendable (String) -> Void)? = nil) {
        self.json = json
        self.sink = sink
    }

    func line(_ value: JSON, text: () -> String) {
        let line = json ? value.serialized : Output.printable(text())
        lock.withLock { _ in
            if let sink { return sink(line) }
            Swift.print(line)
            fflush(nil)  // all streams: stdout is a C global Swift 6 will not touch
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP end `run` cleanly: their handler only writes the signal's
/// number to a pipe (async-signal-safe), and the main thread, waiting on the pipe, shuts
/// down. Whichever thread the kernel picks to take the signal, the effect is the same.
struct ShutdownSignal {
    static let signals = [SIGINT, SIGTERM, SIGHUP]

    let readFD: Int32

    /// Unblocks the signals on this thread. A parent may pass on a mask that blocks them (a
    /// process spawned from a Dispatch worker thread does), and threads created later
    /// inherit this thread's mask: call it before any thread starts.
    static func unblock() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Installs the handlers (process-wide) for `signals` (by default the three above).
    static func install(_ signals: [Int32] = ShutdownSignal.signals) throws -> ShutdownSignal {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw UnixSocket.lastError("pipe") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)  // the handler must never block
        shutdownPipeWriteFD = fds[1]
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signal in
            let saved = errno  // the interrupted code may be about to read it
            var byte = UInt8(truncatingIfNeeded: signal)
            _ = write(shutdownPipeWriteFD, &byte, 1)
            errno = saved
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        for signal in signals {
            guard sigaction(signal, &action, nil) == 0 else { throw UnixSocket.lastError("sigaction") }
        }
        return ShutdownSignal(readFD: fds[0])
    }

    /// Blocks until a signal arrives; returns its number.
    func wait() -> Int32 {
        var byte: UInt8 = 0
        while true {
            let n = read(readFD, &byte, 1)
            if n == 1 { return Int32(byte) }
            if n < 0 && errno == EINTR { continue }
            return SIGTERM  // cannot happen: the write end stays open
        }
    }
}

/// Written once before the handlers are installed, then only read (by them).
nonisolated(unsafe) private var shutdownPipeWriteFD: Int32 = -1
