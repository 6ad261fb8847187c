import Glibc
internal import CPostgres
import YaOKSupport

/// A parameter or column value. Parameters and results travel in binary (no text
/// escaping of packet bytes); the statement says each parameter's type.
enum PostgresValue: Sendable, Equatable {
    case int(Int64)
    case bytes([UInt8])
    case text(String)
}

/// One libpq connection (`PGconn`), blocking, used by one thread at a time (the pool
/// hands it out). Statements are prepared on first use and kept for the connection's life.
/// Any failure that leaves the connection unusable marks it `broken`; the pool drops it.
final class PostgresConnection {
    private let conn: OpaquePointer
    private var prepared = Set<String>()
    private(set) var broken = false
    /// The server process serving this connection (its NOTIFYs carry this pid).
    let backendPID: Int32

    /// Connects with `conninfo` (a `postgresql://` URI or `key=value` string). Throws
    /// `relayUnavailable` when the server cannot be reached.
    init(conninfo: String) throws {
        // expand_dbname: the first "dbname" is the caller's URI or key=value string; the
        // keywords before it are defaults it may override.
        let keys = ["connect_timeout", "application_name", "dbname"]
        let values = ["5", "yaok-relay", conninfo]
        let cKeys = keys.map { strdup($0) }
        let cValues = values.map { strdup($0) }
        defer { (cKeys + cValues).forEach { free($0) } }
        var keyPointers: [UnsafePointer<CChar>?] = cKeys.map { UnsafePointer($0) } + [nil]
        var valuePointers: [UnsafePointer<CChar>?] = cValues.map { UnsafePointer($0) } + [nil]
        guard let conn = PQconnectdbParams(&keyPointers, &valuePointers, 1) else {
            throw YaOKError(.outOfMemory, "libpq could not allocate a connection")
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(conn))
            PQfinish(conn)
            throw YaOKError(.relayUnavailable, "PostgreSQL unavailable: \(message)")
        }
        self.conn = conn
        backendPID = PQbackendPID(conn)
        // A statement that waits longer than this (a lock held by a stuck peer, a server
        // that stopped answering) fails rather than hang the disk thread; quiet notices.
        try execute("SET statement_timeout = 15000; SET client_min_messages = warning")
    }

    deinit { PQfinish(conn) }

    /// The server's version, e.g. 150018.
    var serverVersion: Int { Int(PQserverVersion(conn)) }

    /// The socket, for waiting on notifications.
    var socket: Int32 { PQsocket(conn) }

    /// Runs SQL without parameters (several statements allowed): BEGIN, COMMIT, migrations.
    func execute(_ sql: String) throws {
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        try check(result, sql)
    }

    /// Runs a statement prepared under `name` (prepared on first use) and returns its rows.
    /// `types` are the parameters' type OIDs (`PostgresType`).
    @discardableResult
    func query(_ name: String, _ sql: String, types: [UInt32], _ parameters: [PostgresValue]) throws -> PostgresRows {
        if !prepared.contains(name) {
            let result = types.withUnsafeBufferPointer { PQprepare(conn, name, sql, Int32(types.count), $0.baseAddress) }
            defer { PQclear(result) }
            try check(result, sql)
            prepared.insert(name)
        }
        // Binary parameters: 8-byte big-endian integers, raw bytes, UTF-8 text.
        let encoded: [[UInt8]] = parameters.map {
            switch $0 {
            case .int(let v): return withUnsafeBytes(of: v.bigEndian) { Array($0) }
            case .bytes(let b): return b
            case .text(let t): return Array(t.utf8)
            }
        }
        // NUL-terminated: libpq reads text-format parameters as C strings.
        let copies = encoded.map { bytes -> UnsafeMutablePointer<CChar> in
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            p[bytes.count] = 0
            bytes.withUnsafeBytes { raw in
                if let base = raw.baseAddress { UnsafeMutableRawPointer(p).copyMemory(from: base, byteCount: raw.count) }
            }
            return p
        }
        defer { copies.forEach { $0.deallocate() } }
        var values: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) }
        var lengths: [Int32] = encoded.map { Int32($0.count) }
        var formats: [Int32] = parameters.map { if case .text = $0 { return 0 } else { return 1 } }
        guard let result = PQexecPrepared(conn, name, Int32(parameters.count), &values, &lengths, &formats, 1) else {
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

    static func trimmed(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "" }
        var s = String(cString: text)
        while s.last == "\n" || s.last == " " { s.removeLast() }
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
    func replacingNewlines() -> String { String(map { $0 == "\n" ? " " : $0 }) }
}
