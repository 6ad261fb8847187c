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
        discussion: """
            Without a subcommand, `serve` runs: `yaok-relay --listen HOST:PORT --data DIR \
            (--cert FILE --key FILE | --self-signed)`. `yaok-relay serve --help` lists all of \
            its options (limits, caps, --log-sessions). See docs/RELAY.md.
            """,
        subcommands: [Serve.self, Stats.self, Revoke.self],
        defaultSubcommand: Serve.self)
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the relay until SIGTERM or SIGINT.")

    @Option(help: "Address to listen on, HOST:PORT (IPv4 only; localhost is 127.0.0.1; port 0 picks a free one).") var listen: String
    @Option(help: "Data directory (created 0700): the SQLite store, and the self-signed certificate if asked for.") var data: String
    @Option(help: ArgumentHelp("Keep mailboxes in PostgreSQL, shared with other relay processes: a postgresql:// URI or a libpq connection string. --data then holds only the certificate.", valueName: "conninfo"))
    var postgres: String?
    @Option(help: "PostgreSQL connections this relay may open (with --postgres; plus one for LISTEN).") var poolSize = 4
    @Option(help: "TLS certificate (PEM).") var cert: String?
    @Option(help: "TLS private key (PEM).") var key: String?
    @Flag(help: "Use a self-signed certificate kept in the data directory, and print its pin.") var selfSigned = false
    @Option(help: "Messages per pseudonym per hour (acks: ten times as many).") var rateLimit = 100
    @Option(help: "Packets one mailbox may hold.") var mailboxQuota = 1000
    @Option(help: "Bytes of packets one IPv4 address may post per rolling hour (default 32 MiB).") var addressBytesPerHour = 32 << 20
    @Option(help: "Bytes of packets all IPv4 addresses of one /24 may post per rolling hour (default 128 MiB).") var prefixBytesPerHour = 128 << 20
    @Option(help: "Session lifetime in seconds.") var sessionLifetime = 3600.0
    @Option(help: "Most simultaneous connections (clamped to the open-files limit, which the relay raises to its hard limit, less 64).") var maxConnections = 10_000
    @Option(help: "Most simultaneous connections from one IPv4 address.") var maxConnectionsPerAddress = 64
    @Option(help: "Most simultaneous connections from one /24 (IPv4 addresses a.b.c.*).") var maxConnectionsPerPrefix = 256
    @Option(help: "Seconds a session may stay READY without a SUBSCRIBE or POST.") var activityGrace = 30.0
    @Option(help: "Most connections from one IPv4 address still in TLS or AUTH (not yet READY).") var maxPendingPerAddress = 32
    @Option(help: "Seconds of silence before a connection is closed.") var idleTimeout = 120.0
    @Option(help: "DELETE refs all sessions of one IPv4 address may send per second, with a burst of four seconds' worth (default 4,096); past it their connections are not read from until the budget refills.") var addressDeletesPerSecond = 4_096
    @Option(help: "Bytes of packets the relay stores in all; beyond, POSTs get ERROR unavailable (default 8 GiB).") var maxStoredBytes = 8 << 30
    @Option(help: "Bytes of stored packets one IPv4 address may hold, over all its pseudonyms, until deleted or expired; beyond, its POSTs get ERROR unavailable (default: a 32nd of --max-stored-bytes, clamped to --prefix-stored-bytes).") var addressStoredBytes: Int?
    @Option(help: "The same for all IPv4 addresses of one /24 together (default: an 8th of --max-stored-bytes, clamped to it).") var prefixStoredBytes: Int?
    @Flag(help: "Print a line per session on stdout: when it is ready (pseudonym, IP address) and when it ends (why, posts).") var logSessions = false
    @Option(help: "Free bytes the data directory's disk must keep; below, POSTs get ERROR unavailable (default 512 MiB).") var minFreeBytes = 512 << 20
    @Flag(help: "Do not carry packets for nodes (CARRY frames are then ignored; docs/RELAY.md, Carrying).") var noCarry = false
    @Option(help: "Carried packets the relay holds at most (default 50,000).") var carryMaxPackets = 50_000
    @Option(help: "Bytes of carried packets the relay holds at most (default 512 MiB).") var carryMaxBytes = 512 << 20
    @Option(help: "Carried packets one IPv4 address may deposit per clock hour (default 500).") var carryPacketsPerHour = 500
    @Option(help: "Bytes of carried packets one IPv4 address may deposit per clock hour (default 8 MiB).") var carryBytesPerHour = 8 << 20
    @Option(help: "Bytes of carried packets the relay hands one IPv4 address per clock hour (default 32 MiB).") var carryHandedBytesPerHour = 32 << 20

    func validate() throws {
        _ = try Self.parse(listen)
        guard selfSigned != (cert != nil || key != nil), selfSigned || (cert != nil && key != nil) else {
            throw ValidationError("Give either --cert FILE --key FILE or --self-signed")
        }
        guard rateLimit >= 1, mailboxQuota >= 1, addressBytesPerHour >= 1, prefixBytesPerHour >= 1, sessionLifetime >= 1, maxConnections >= 1, maxConnectionsPerAddress >= 1, maxConnectionsPerPrefix >= 1, activityGrace >= 1, maxPendingPerAddress >= 1, idleTimeout >= 1, addressDeletesPerSecond >= 1,
              maxStoredBytes >= 1, minFreeBytes >= 0, poolSize >= 1, carryHandedBytesPerHour >= 1, (addressStoredBytes ?? 1) >= 1, (prefixStoredBytes ?? 1) >= 1 else {
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
        configuration.addressBytesPerHour = addressBytesPerHour
        configuration.prefixBytesPerHour = prefixBytesPerHour
        configuration.sessionLifetimeSeconds = sessionLifetime
        configuration.maxConnections = maxConnections
        configuration.maxConnectionsPerAddress = maxConnectionsPerAddress
        configuration.maxConnectionsPerPrefix = maxConnectionsPerPrefix
        configuration.activityGraceSeconds = activityGrace
        configuration.maxPendingPerAddress = maxPendingPerAddress
        configuration.idleTimeoutSeconds = idleTimeout
        configuration.deleteRefsPerSecondPerAddress = Double(addressDeletesPerSecond)
        configuration.deleteRefsBurstPerAddress = 4 * Double(addressDeletesPerSecond)
        configuration.maxStoredBytes = maxStoredBytes
        configuration.addressStoredBytes = addressStoredBytes
        configuration.prefixStoredBytes = prefixStoredBytes
        configuration.minFreeDiskBytes = minFreeBytes
        configuration.dataDirectory = data
        configuration.carryMaxPackets = carryMaxPackets
        configuration.carryMaxBytes = carryMaxBytes
        configuration.carryPacketsPerHour = carryPacketsPerHour
        configuration.carryBytesPerHour = carryBytesPerHour
        configuration.carryHandedBytesPerHour = carryHandedBytesPerHour
        if logSessions { configuration.sessionLog = { say($0) } }
        let server = try failing { () throws -> RelayServer in
            // Bound first: a port in use or an address this machine lacks fails before the
            // data directory, the database or a certificate is made, and before `pin:`.
            let listener = try RelayListener(host: host, port: port)
            let store: RelayStore
            var carry: RelayCarryStorage?
            if let postgres {
                store = try PostgresRelayStore(conninfo: postgres, poolSize: poolSize, directory: data, log: { sayError("yaok-relay: " + $0) })
                if !noCarry { carry = try RelayCarryStorage.postgres(conninfo: postgres) }
            } else {
                store = try SQLiteRelayStore(directory: data)
                if !noCarry { carry = try RelayCarryStorage.sqlite(directory: data) }
            }
            let context = selfSigned ? try TLSContext.selfSigned(directory: data)
                : try TLSContext.server(certificateFile: cert ?? "", keyFile: key ?? "")
            if selfSigned, let pin = context.certificatePin { say("pin: " + Hex.encode(pin)) }
            return try RelayServer(configuration: configuration, store: store, security: .tls(context), listener: listener,
                                   carry: carry)
        }
        say("listening: \(host):\(server.port)")
        let caps = server.caps
        say("connections: at most \(caps.connections) (open-files limit \(caps.descriptorLimit)), \(caps.perAddress) per IPv4 address, \(caps.perPrefix) per /24")
        let quotas = configuration.storedQuotas
        say("storage: at most \(configuration.maxStoredBytes) bytes of packets, \(quotas.address) held per IPv4 address, \(quotas.prefix) per /24")
        say(noCarry ? "carrying: off" : "carrying: at most \(carryMaxPackets) packets, \(carryMaxBytes) bytes; \(carryPacketsPerHour) packets, \(carryBytesPerHour) bytes per IPv4 address per hour")
        var received: Int32 = 0
        sigwait(&signals, &received)
        say("stopping (signal \(received))")
        server.stop()
    }

    /// HOST:PORT with an IPv4 address (or localhost) and a port 0-65535.
    static func parse(_ text: String) throws -> (String, UInt16) {
        if text.hasPrefix("[") || text.filter({ $0 == ":" }).count > 1 {
            throw ValidationError("--listen \(text): the relay listens on IPv4 only, e.g. 0.0.0.0:7443 or 127.0.0.1:7443")
        }
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw ValidationError("--listen \(text): give HOST:PORT, e.g. 0.0.0.0:7443 (IPv4; port 0 to 65535)")
        }
        let host = String(text[..<colon])
        var address = in_addr()
        guard host == "localhost" || inet_pton(AF_INET, host, &address) == 1 else {
            throw ValidationError("--listen \(text): \(host.isEmpty ? "no host" : host) is not an IPv4 address (names other than localhost are not looked up)")
        }
        return (host, port)
    }
}

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the relay's counters (it saves them every second); with --postgres, every relay's of the cluster added up.")
    @Option(help: "Data directory (SQLite).") var data: String?
    @Option(help: ArgumentHelp("The relays' PostgreSQL database (URI or libpq connection string).", valueName: "conninfo")) var postgres: String?
    @Flag(help: "Print JSON.") var json = false
    @Option(help: "Also list the N pseudonyms (at most 100) with the most posts in the last hour, to find one to revoke.") var top = 0

    func validate() throws {
        guard (0...100).contains(top) else { throw ValidationError("--top takes 1 to 100") }
        guard (data == nil) != (postgres == nil) else { throw ValidationError("Give either --data DIR or --postgres CONNINFO") }
    }

    func run() throws {
        let stats = try failing {
            if let postgres { return try RelayStatistics.read(postgres: postgres) }
            return try RelayStatistics.read(directory: data ?? "")
        }
        if json {
            say(stats.json(top: top).serialized)
        } else {
            say(stats.text)
            if top > 0 { say(stats.topText(top)) }
        }
    }
}

struct Revoke: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Revoke a pseudonym: its sessions end within a second, new logins are refused; the packets it posted are deleted.")
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
                store = try PostgresRelayStore(conninfo: postgres, poolSize: 1, migrate: false)
            } else {
                let data = data ?? ""
                guard SQLiteRelayStore.exists(in: data) else { throw YaOKError(.notFound, "No relay data in \(data)") }
                store = try SQLiteRelayStore(directory: data, posting: false)
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
