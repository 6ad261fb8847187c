import Glibc
internal import CPostgres
import YaOKSupport

/// A parameter or column value. Parameters and results travel in binary (no text
/// escaping of packet bytes); the statement says each parameter's type.
enum PostgresValue: Sendable, Equatable {
    case int(Int64)
    case bytes([UInt8])
    case text(String)
    /// One-dimensional arrays, sent in binary (a commit's packets: no hex text for the
    /// server to parse). The statement's type must be `byteaArray` or `int8Array`.
    case byteaArray([[UInt8]])
    case int8Array([Int64])

    /// The binary send format (array_send): dimensions, no NULLs, the element type, then
    /// each element's length and bytes.
    var encoded: [UInt8] {
        func be32(_ v: Int32, _ out: inout [UInt8]) { withUnsafeBytes(of: v.bigEndian) { out += $0 } }
        func array(_ elementType: UInt32, _ elements: [[UInt8]]) -> [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(20 + elements.reduce(0) { $0 + 4 + $1.count })
            be32(elements.isEmpty ? 0 : 1, &out)
            be32(0, &out)
            be32(Int32(bitPattern: elementType), &out)
            if !elements.isEmpty {
                be32(Int32(elements.count), &out)
                be32(1, &out)
            }
            for e in elements {
                be32(Int32(e.count), &out)
                out += e
            }
            return out
        }
        switch self {
        case .int(let v): return withUnsafeBytes(of: v.bigEndian) { Array($0) }
        case .bytes(let b): return b
        case .text(let t): return Array(t.utf8)
        case .byteaArray(let a): return array(PostgresType.bytea, a)
        case .int8Array(let a): return array(PostgresType.int8, a.map { v in withUnsafeBytes(of: v.bigEndian) { Array($0) } })
        }
    }
}

/// One libpq connection (`PGconn`), blocking, used by one thread at a time (the pool
/// hands it out). Statements are prepared on first use and kept for the connection's life.
/// Any failure that leaves the connection unusable marks it `broken`; the pool drops it.
final class PostgresConnection {
    private let conn: OpaquePointer
    private var prepared = Set<String>()
    private(set) var broken = false
    /// Exchanges with the server so far (a statement, or a pipeline of them, and its
    /// answer): each is a wake-up of the server and of this thread. Tests count them.
    private(set) var roundTrips = 0
    /// The server process serving this connection (its NOTIFYs carry this pid).
    let backendPID: Int32

    /// Connects with `conninfo` (a `postgresql://` URI or `key=value` string). Throws
    /// `relayUnavailable` when the server cannot be reached.
    /// How long a statement may take, client side, before the connection is given up as
    /// broken and the caller gets `relayUnavailable`: a server that stopped answering
    /// (frozen, a dead network path) must not hold a POST for longer.
    static let defaultTimeoutSeconds: Double = 5

    init(conninfo: String) throws {
        // expand_dbname: the first "dbname" is the caller's URI or key=value string; the
        // keywords before it are defaults it may override.
        // Keepalives and tcp_user_timeout: a peer that vanished (TCP) is noticed in seconds,
        // not hours; ignored on a Unix socket, where the client-side deadline still holds.
        let keys = ["connect_timeout", "application_name", "keepalives", "keepalives_idle", "keepalives_interval",
                    "keepalives_count", "tcp_user_timeout", "dbname"]
        let values = ["5", "yaok-relay", "1", "10", "5", "3", "10000", conninfo]
        let cKeys = keys.map { strdup($0) }
        let cValues = values.map { strdup($0) }
        defer { (cKeys + cValues).forEach { free($0) } }
        var keyPointers: [UnsafePointer<CChar>?] = cKeys.map { UnsafePointer($0) } + [nil]
        var valuePointers: [UnsafePointer<CChar>?] = cValues.map { UnsafePointer($0) } + [nil]
        guard let conn = PQconnectdbParams(&keyPointers, &valuePointers, 1) else {
            throw YaOKError(.outOfMemory, "libpq could not allocate a connection")
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            // libpq quotes pieces of a malformed connection string: never a password.
            let message = Self.redacted(Self.trimmed(PQerrorMessage(conn)), conninfo: conninfo)
            PQfinish(conn)
            throw YaOKError(.relayUnavailable, "PostgreSQL unavailable: \(message)")
        }
        self.conn = conn
        backendPID = PQbackendPID(conn)
        // The server's notices (warnings) on stderr as one line, marked as the relay's.
        PQsetNoticeProcessor(conn, { _, message in
            let line = "yaok-relay: PostgreSQL notice: " + PostgresConnection.trimmed(message) + "\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
        }, nil)
        // A statement that waits longer than this (a lock held by a stuck peer, a server
        // that stopped answering) fails rather than hang the disk thread; quiet notices.
        try execute("SET statement_timeout = 15000; SET client_min_messages = warning")
        // The server notices a client that gave up (the deadline below) during a statement.
        if serverVersion >= 140000 { try execute("SET client_connection_check_interval = 5000") }
    }

    deinit { PQfinish(conn) }

    /// The server's version, e.g. 150018.
    var serverVersion: Int { Int(PQserverVersion(conn)) }

    /// The socket, for waiting on notifications.
    var socket: Int32 { PQsocket(conn) }

    /// Runs SQL without parameters (several statements allowed): BEGIN, COMMIT, migrations.
    func execute(_ sql: String, timeout: Double = defaultTimeoutSeconds) throws {
        let result = try run(sql, timeout: timeout) { PQsendQuery(conn, sql) }
        defer { PQclear(result) }
        try check(result, sql)
    }

    /// Sends with `send` and waits for every result, at most `timeout` seconds: past that
    /// the connection is marked broken (the pool drops it; the server ends the statement
    /// when it notices) and `relayUnavailable` is thrown. Returns the first error result,
    /// or else the last result.
    private func run(_ sql: String, timeout: Double, _ send: () -> Int32) throws -> OpaquePointer? {
        let exchange = try Exchange(self, timeout: timeout)
        roundTrips += 1
        guard send() == 1 else { throw exchange.lost() }
        try exchange.flush()
        var kept: OpaquePointer?
        while true {
            let next: OpaquePointer?
            do {
                next = try exchange.nextResult()
            } catch {
                PQclear(kept)
                throw error
            }
            guard let result = next else { break }
            let failed = ![PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY].contains(PQresultStatus(result))
            let keptFailed = kept.map { ![PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY].contains(PQresultStatus($0)) } ?? false
            if keptFailed && !failed {
                PQclear(result)
            } else {
                PQclear(kept)
                kept = result
            }
        }
        _ = sql
        return kept
    }

    /// One exchange with the server (`run`, `pipeline`): its deadline, `timeout` seconds
    /// from its start, and the waits for the socket under it. Past the deadline, or when
    /// libpq fails, the connection is marked broken (the pool drops it; the server ends the
    /// statement when it notices) and `relayUnavailable` is thrown.
    private struct Exchange {
        let connection: PostgresConnection
        let timeout: Double
        let deadline: Int64

        init(_ connection: PostgresConnection, timeout: Double) throws {
            guard !connection.broken else { throw YaOKError(.relayUnavailable, "PostgreSQL: the connection is broken") }
            self.connection = connection
            self.timeout = timeout
            deadline = PostgresConnection.nowMs() + Int64(timeout * 1000)
        }

        /// Marks the connection broken; the error says why (libpq's message by default).
        func lost(_ why: String? = nil) -> YaOKError {
            connection.broken = true
            return YaOKError(.relayUnavailable, "PostgreSQL: \(why ?? PostgresConnection.trimmed(PQerrorMessage(connection.conn)))")
        }

        /// Until the socket is ready for `events`, or the deadline.
        func wait(_ events: Int32) throws {
            while true {
                let left = deadline - PostgresConnection.nowMs()
                guard left > 0 else { throw lost("no answer within \(Int(timeout)) s (server frozen or unreachable); connection dropped") }
                var p = pollfd(fd: PQsocket(connection.conn), events: Int16(events), revents: 0)
                let ready = poll(&p, 1, Int32(min(left, 1000)))
                if ready > 0 { return }
                if ready < 0 && errno != EINTR { throw lost("poll: \(String(cString: strerror(errno)))") }
            }
        }

        /// Sends whatever did not fit the socket's buffer at once (reading meanwhile).
        func flush() throws {
            let conn = connection.conn
            while true {
                let flushed = PQflush(conn)
                if flushed == 0 { return }
                if flushed < 0 { throw lost() }
                try wait(Int32(POLLIN | POLLOUT))
                guard PQconsumeInput(conn) == 1 else { throw lost() }
            }
        }

        /// The next result once it has all come (nil: the statement's results are done).
        func nextResult() throws -> OpaquePointer? {
            let conn = connection.conn
            while PQisBusy(conn) == 1 {
                try wait(Int32(POLLIN))
                guard PQconsumeInput(conn) == 1 else { throw lost() }
            }
            return PQgetResult(conn)
        }
    }

    private static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Runs a statement prepared under `name` (prepared on first use) and returns its rows.
    /// `types` are the parameters' type OIDs (`PostgresType`).
    @discardableResult
    func query(_ name: String, _ sql: String, types: [UInt32], _ parameters: [PostgresValue],
               timeout: Double = defaultTimeoutSeconds) throws -> PostgresRows {
        if !prepared.contains(name) {
            let result = try run(sql, timeout: timeout) {
                types.withUnsafeBufferPointer { PQsendPrepare(conn, name, sql, Int32(types.count), $0.baseAddress) }
            }
            defer { PQclear(result) }
            try check(result, sql)
            prepared.insert(name)
        }
        let sent = try Self.withParameters(parameters) { values, lengths, formats in
            try run(sql, timeout: timeout) {
                PQsendQueryPrepared(conn, name, Int32(parameters.count), values, lengths, formats, 1)
            }
        }
        guard let result = sent else {
            broken = PQstatus(conn) != CONNECTION_OK
            throw YaOKError(.relayUnavailable, "PostgreSQL: \(Self.trimmed(PQerrorMessage(conn)))")
        }
        do {
            try check(result, sql)
        } catch {
            PQclear(result)
            throw error
        }
        return PostgresRows(result)
    }

    /// One statement of a pipeline (`pipeline`).
    struct Statement {
        let name: String
        let sql: String
        let types: [UInt32]
        let parameters: [PostgresValue]
    }

    /// Sends `statements` at once in libpq's pipeline mode and returns their rows in order:
    /// one round trip, and one wake-up of the server, for all of them, where `query` costs
    /// one each. They run in order as if sent one by one; after a failure the rest are not
    /// run, and the first failure is thrown (inside a transaction, the caller rolls back).
    func pipeline(_ statements: [Statement], timeout: Double = defaultTimeoutSeconds) throws -> [PostgresRows] {
        guard !statements.isEmpty else { return [] }
        for s in statements where !prepared.contains(s.name) {
            let result = try run(s.sql, timeout: timeout) {
                s.types.withUnsafeBufferPointer { PQsendPrepare(conn, s.name, s.sql, Int32(s.types.count), $0.baseAddress) }
            }
            defer { PQclear(result) }
            try check(result, s.sql)
            prepared.insert(s.name)
        }
        let exchange = try Exchange(self, timeout: timeout)
        // Non-blocking while in the pipeline: the server's results are read while the rest
        // is still being sent, so that neither side waits on a full socket buffer.
        guard PQsetnonblocking(conn, 1) == 0, PQenterPipelineMode(conn) == 1 else { throw exchange.lost() }
        defer {
            if !broken {
                _ = PQexitPipelineMode(conn)
                _ = PQsetnonblocking(conn, 0)
            }
        }
        for s in statements {
            let sent = Self.withParameters(s.parameters) { values, lengths, formats in
                PQsendQueryPrepared(conn, s.name, Int32(s.parameters.count), values, lengths, formats, 1)
            }
            guard sent == 1 else { throw exchange.lost() }
        }
        roundTrips += 1
        guard PQpipelineSync(conn) == 1 else { throw exchange.lost() }
        try exchange.flush()
        var rows: [PostgresRows] = []
        var failure: Error?
        for s in statements {
            // Each statement's result, then NULL.
            var kept: OpaquePointer?
            while let result = try exchange.nextResult() {
                if kept == nil { kept = result } else { PQclear(result) }
            }
            guard let result = kept else { throw exchange.lost("a pipelined statement returned no result") }
            if failure == nil {
                let status = PQresultStatus(result)
                if status == PGRES_PIPELINE_ABORTED {
                    failure = YaOKError(.storage, "PostgreSQL: a pipelined statement was not run")
                    PQclear(result)
                } else {
                    do {
                        try check(result, s.sql)
                        rows.append(PostgresRows(result))
                    } catch {
                        failure = error
                        PQclear(result)
                    }
                }
            } else {
                PQclear(result)
            }
        }
        // The sync's own result ends the pipeline.
        while let result = try exchange.nextResult() {
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        if let failure { throw failure }
        return rows
    }

    /// Binary parameters (8-byte big-endian integers, raw bytes) and text ones (UTF-8,
    /// NUL-terminated: libpq reads text-format parameters as C strings), for libpq's calls.
    private static func withParameters<T>(_ parameters: [PostgresValue],
                                          _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) throws -> T) rethrows -> T {
        let encoded: [[UInt8]] = parameters.map(\.encoded)
        let copies = encoded.map { bytes -> UnsafeMutablePointer<CChar> in
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            p[bytes.count] = 0
            bytes.withUnsafeBytes { raw in
                if let base = raw.baseAddress { UnsafeMutableRawPointer(p).copyMemory(from: base, byteCount: raw.count) }
            }
            return p
        }
        defer { copies.forEach { $0.deallocate() } }
        let values: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) }
        let lengths: [Int32] = encoded.map { Int32($0.count) }
        let formats: [Int32] = parameters.map { if case .text = $0 { return 0 } else { return 1 } }
        return try values.withUnsafeBufferPointer { v in
            try lengths.withUnsafeBufferPointer { l in
                try formats.withUnsafeBufferPointer { f in try body(v.baseAddress, l.baseAddress, f.baseAddress) }
            }
        }
    }

    /// Reads what arrived on the socket and returns the notifications among it:
    /// (channel, payload, notifying server pid).
    func notifications() throws -> [(channel: String, payload: String, pid: Int32)] {
        guard PQconsumeInput(conn) == 1 else {
            broken = true
            throw YaOKError(.relayUnavailable, "PostgreSQL: \(Self.trimmed(PQerrorMessage(conn)))")
        }
        var out: [(String, String, Int32)] = []
        while let n = PQnotifies(conn) {
            out.append((String(cString: n.pointee.relname), String(cString: n.pointee.extra), n.pointee.be_pid))
            PQfreemem(n)
        }
        return out
    }

    private func check(_ result: OpaquePointer?, _ sql: String) throws {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK else { return }
        let state = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) } ?? ""
        let message = Self.trimmed(result.map { PQresultErrorMessage($0) } ?? PQerrorMessage(conn))
        if PQstatus(conn) != CONNECTION_OK { broken = true }
        throw PostgresError(sqlState: state, message: message.isEmpty ? Self.trimmed(PQerrorMessage(conn)) : message,
                            connectionLost: broken)
    }

    /// `text` (a connection string, or a message that may quote one) without passwords:
    /// the URI's `user:password@` and `password=...` become `***`, and so does the password
    /// `conninfo` holds wherever it appears. Use it whenever a connection string is shown.
    public static func redacted(_ text: String, conninfo: String? = nil) -> String {
        var out = text
        if let conninfo, let options = PQconninfoParse(conninfo, nil) {
            var p = options
            while let keyword = p.pointee.keyword {
                if String(cString: keyword) == "password", let value = p.pointee.val {
                    let password = String(cString: value)
                    if !password.isEmpty { out = out.replacing(password, with: "***") }
                }
                p += 1
            }
            PQconninfoFree(options)
        }
        var c = Array(out)
        func matches(_ word: String, at i: Int) -> Bool {
            let w = Array(word)
            return i + w.count <= c.count && zip(c[i..<i + w.count], w).allSatisfy { $0.lowercased() == $1.lowercased() }
        }
        // postgresql://user:secret@host → postgresql://user:***@host
        var i = 0
        while i < c.count {
            if matches("://", at: i) {
                let start = i + 3
                var end = start
                while end < c.count && !"/ ?".contains(c[end]) { end += 1 }
                if let at = c[start..<end].lastIndex(of: "@"), let colon = c[start..<at].firstIndex(of: ":") {
                    c.replaceSubrange(colon + 1..<at, with: Array("***"))
                }
                i = start
            } else if matches("password", at: i) {
                // password=secret, password = 'se cret' (key=value strings, URI parameters)
                var j = i + 8
                while j < c.count && c[j] == " " { j += 1 }
                guard j < c.count && c[j] == "=" else { i += 8; continue }
                j += 1
                while j < c.count && c[j] == " " { j += 1 }
                var end = j
                if end < c.count && c[end] == "'" {
                    end += 1
                    while end < c.count && c[end] != "'" { end += c[end] == "\\" ? 2 : 1 }
                    end = min(end + 1, c.count)
                } else {
                    while end < c.count && !" &\"".contains(c[end]) { end += 1 }
                }
                c.replaceSubrange(j..<end, with: Array("***"))
                i = j + 3
            } else {
                i += 1
            }
        }
        return String(c)
    }

    static func trimmed(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "" }
        var s = String(cString: text)
        while s.last == "\n" || s.last == " " || s.last == "\t" || s.last == "\r\n" { s.removeLast() }
        return s.replacingNewlines()
    }
}

/// Parameter type OIDs (pg_type.h), for preparing statements.
enum PostgresType {
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let bytea: UInt32 = 17
    /// Arrays, passed in their text form ("{1,-2}", "{\"\\\\x0a\"}").
    static let byteaArray: UInt32 = 1001
    static let int8Array: UInt32 = 1016
}

/// A statement's failure, with its SQLSTATE: the store tells a lost server (retry later,
/// `relayUnavailable`) from a conflict (retry now) from a bug.
struct PostgresError: Error, CustomStringConvertible {
    let sqlState: String
    let message: String
    let connectionLost: Bool

    /// Class 08 (connection), 57P01-03 (shut down, starting up): the server is away.
    var isUnavailable: Bool {
        connectionLost || sqlState.hasPrefix("08") || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03"
    }

    /// Deadlock or serialization failure: the transaction may simply be run again.
    var isRetryable: Bool { sqlState == "40P01" || sqlState == "40001" }

    var description: String { "PostgreSQL\(sqlState.isEmpty ? "" : " \(sqlState)"): \(message)" }

    var yaokError: YaOKError {
        YaOKError(isUnavailable ? .relayUnavailable : .storage, description)
    }
}

/// The rows of one result, read in binary. Owns the `PGresult` until it is freed.
final class PostgresRows {
    private let result: OpaquePointer

    init(_ result: OpaquePointer) { self.result = result }
    deinit { PQclear(result) }

    var count: Int { Int(PQntuples(result)) }

    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(result, Int32(row), Int32(column)) == 1 }

    func bytes(_ row: Int, _ column: Int) -> [UInt8] {
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard length > 0, let p = PQgetvalue(result, Int32(row), Int32(column)) else { return [] }
        return p.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    /// An int2, int4 or int8 column (NULL reads as 0).
    func int64(_ row: Int, _ column: Int) -> Int64 {
        let b = bytes(row, column)
        var v: Int64 = 0
        for byte in b { v = v << 8 | Int64(byte) }
        // Sign-extend the narrower types.
        if !b.isEmpty && b.count < 8 && b[0] & 0x80 != 0 { v -= Int64(1) << (8 * b.count) }
        return v
    }

    func int(_ row: Int, _ column: Int) -> Int { Int(int64(row, column)) }

    func text(_ row: Int, _ column: Int) -> String { String(decoding: bytes(row, column), as: UTF8.self) }
}

private extension String {
    /// One line: newlines, carriage returns and tabs (libpq's DETAIL/HINT layout) as spaces.
    func replacingNewlines() -> String { String(map { $0 == "\n" || $0 == "\r" || $0 == "\t" || $0 == "\r\n" ? " " : $0 }) }
}
