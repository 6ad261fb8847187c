import ArgumentParser
import Glibc
import YaOKSupport
import YaOKTLS
import YaOKRelayServer

/// `yaok-relay`: the store-and-forward relay (docs/RELAY.md). All logic is in
/// YaOKRelayServer; this file only reads flags and prints.
struct RelayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "yaok-relay",
        abstract: "The Ya OK relay: stores end-to-end encrypted packets for offline recipients.",
        subcommands: [Serve.self, Stats.self, Revoke.self],
        defaultSubcommand: Serve.self)
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the relay until SIGTERM or SIGINT.")

    @Option(help: "Address to listen on, HOST:PORT (IPv4; port 0 picks a free one).") var listen: String
    @Option(help: "Data directory (created 0700): the SQLite store, and the self-signed certificate if asked for.") var data: String
    @Option(help: ArgumentHelp("Keep mailboxes in PostgreSQL, shared with other relay processes: a postgresql:// URI or a libpq connection string. --data then holds only the certificate.", valueName: "conninfo"))
    var postgres: String?
    @Option(help: "PostgreSQL connections this relay may open (with --postgres; plus one for LISTEN).") var poolSize = 4
    @Option(help: "TLS certificate (PEM).") var cert: String?
    @Option(help: "TLS private key (PEM).") var key: String?
    @Flag(help: "Use a self-signed certificate kept in the data directory, and print its pin.") var selfSigned = false
    @Option(help: "Messages per pseudonym per hour (acks: ten times as many).") var rateLimit = 100
    @Option(help: "Packets one mailbox may hold.") var mailboxQuota = 1000
    @Option(help: "Session lifetime in seconds.") var sessionLifetime = 3600.0
    @Option(help: "Most simultaneous connections.") var maxConnections = 10_000
    @Option(help: "Most simultaneous connections from one IPv4 address.") var maxConnectionsPerAddress = 1_024
    @Option(help: "Seconds of silence before a connection is closed.") var idleTimeout = 120.0

    func validate() throws {
        guard selfSigned != (cert != nil || key != nil), selfSigned || (cert != nil && key != nil) else {
            throw ValidationError("Give either --cert FILE --key FILE or --self-signed")
        }
        guard rateLimit >= 1, mailboxQuota >= 1, sessionLifetime >= 1, maxConnections >= 1, maxConnectionsPerAddress >= 1, idleTimeout >= 1, poolSize >= 1 else {
            throw ValidationError("Limits and timeouts must be at least 1")
        }
    }

    func run() throws {
        // Before any thread exists, so that every thread inherits the mask and only
        // sigwait below sees these signals.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        let (host, port) = try Self.parse(listen)
        var configuration = RelayConfiguration()
        configuration.ratePerHour = rateLimit
        configuration.mailboxQuotaPackets = mailboxQuota
        configuration.sessionLifetimeSeconds = sessionLifetime
        configuration.maxConnections = maxConnections
        configuration.maxConnectionsPerAddress = maxConnectionsPerAddress
        configuration.idleTimeoutSeconds = idleTimeout
        let server = try failing { () throws -> RelayServer in
            let store: RelayStore
            if let postgres {
                store = try PostgresRelayStore(conninfo: postgres, poolSize: poolSize, log: { sayError("yaok-relay: " + $0) })
            } else {
                store = try SQLiteRelayStore(directory: data)
            }
            let context = selfSigned ? try TLSContext.selfSigned(directory: data)
                : try TLSContext.server(certificateFile: cert ?? "", keyFile: key ?? "")
            if selfSigned, let pin = context.certificatePin { say("pin: " + Hex.encode(pin)) }
            return try RelayServer(configuration: configuration, store: store, security: .tls(context), host: host, port: port)
        }
        say("listening: \(host):\(server.port)")
        var received: Int32 = 0
        sigwait(&signals, &received)
        say("stopping (signal \(received))")
        server.stop()
    }

    static func parse(_ text: String) throws -> (String, UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw ValidationError("--listen takes HOST:PORT, e.g. 0.0.0.0:7443")
        }
        return (String(text[..<colon]), port)
    }
}

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the relay's counters (it saves them every second); with --postgres, every relay's of the cluster added up.")
    @Option(help: "Data directory (SQLite).") var data: String?
    @Option(help: ArgumentHelp("The relays' PostgreSQL database (URI or libpq connection string).", valueName: "conninfo")) var postgres: String?
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        guard (data == nil) != (postgres == nil) else { throw ValidationError("Give either --data DIR or --postgres CONNINFO") }
    }

    func run() throws {
        let stats = try failing {
            if let postgres { return try RelayStatistics.read(postgres: postgres) }
            return try RelayStatistics.read(directory: data ?? "")
        }
        say(json ? stats.json.serialized : stats.text)
    }
}

struct Revoke: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Revoke a pseudonym: its sessions end within a second, new logins are refused; what is stored for it stays until it expires.")
    @Option(help: "Data directory (SQLite).") var data: String?
    @Option(help: ArgumentHelp("The relays' PostgreSQL database (URI or libpq connection string).", valueName: "conninfo")) var postgres: String?
    @Argument(help: "The pseudonym's public key, 64 hex digits.") var pseudonym: String

    func validate() throws {
        guard (data == nil) != (postgres == nil) else { throw ValidationError("Give either --data DIR or --postgres CONNINFO") }
    }

    func run() throws {
        guard let key = decodeHex(pseudonym), key.count == 32 else {
            throw ValidationError("A pseudonym is 64 hex digits")
        }
        try failing {
            let store: RelayStore
            if let postgres {
                store = try PostgresRelayStore(conninfo: postgres, poolSize: 1)
            } else {
                let data = data ?? ""
                guard SQLiteRelayStore.exists(in: data) else { throw YaOKError(.notFound, "No relay data in \(data)") }
                store = try SQLiteRelayStore(directory: data)
            }
            defer { store.close() }
            try store.revoke(pseudonym: key, nowMs: Clock.milliseconds())
        }
        say("revoked: \(pseudonym.lowercased())")
    }
}

/// One line to stdout, flushed at once (tests and supervisors read it live).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}

/// One line to stderr (diagnostics: the database going away and coming back).
func sayError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// Runs `body`; a YaOKError becomes its message on stderr and exit status 1.
@discardableResult
func failing<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as YaOKError {
        let bytes = Array("yaok-relay: \(error.message)\n".utf8)
        _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        throw ExitCode.failure
    }
}

func decodeHex(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
    var out: [UInt8] = []
    var i = 0
    while i < digits.count {
        guard let hi = value(digits[i]), let lo = value(digits[i + 1]) else { return nil }
        out.append(hi << 4 | lo)
        i += 2
    }
    return out
}

RelayCommand.main()
