import Foundation
import Glibc
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport

/// Which store a behaviour test runs against: the same tests run on both.
enum StoreBackend: CustomStringConvertible {
    case sqlite
    case postgres

    var description: String { self == .sqlite ? "SQLite" : "PostgreSQL" }
}

/// The PostgreSQL server for the tests: `YAOK_TEST_POSTGRES` (a libpq key=value string for
/// a server where databases may be created; scripts/test sets it), or else a throw-away
/// server that this test process starts with scripts/pg-temp and removes at exit. Each
/// test gets a database of its own.
///
/// Without PostgreSQL the PostgreSQL variants fail when `YAOK_REQUIRE_POSTGRES=1` (CI
/// sets it: they must run there) and are skipped otherwise, with how to install it.
enum TestPostgres {
    private static let server = Locked<Result<String, TestFailure>?>(nil)

    static func base() throws -> String {
        let result = server.withLock { cached -> Result<String, TestFailure> in
            if let cached { return cached }
            let made = start()
            cached = made
            return made
        }
        switch result {
        case .success(let conninfo):
            return conninfo
        case .failure(let failure):
            if ProcessInfo.processInfo.environment["YAOK_REQUIRE_POSTGRES"] == "1" { throw failure }
            throw XCTSkip("PostgreSQL variant skipped: \(failure.description)")
        }
    }

    /// A new, empty database; its connection string.
    static func freshDatabase() throws -> String {
        let base = try base()
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let c = try PostgresConnection(conninfo: base)
        try c.execute("CREATE DATABASE \(name)")
        return base + " dbname=\(name)"
    }

    private static func start() -> Result<String, TestFailure> {
        if let given = ProcessInfo.processInfo.environment["YAOK_TEST_POSTGRES"], !given.isEmpty {
            return .success(given)
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/pg-temp").standardized.path
        let directory = NSTemporaryDirectory() + "yaok-test-pg-\(getpid())"
        // system(3) with output to files, not Process with pipes: the server outlives the
        // script and inherits the test process's descriptors, so a pipe would never end.
        let status = system("'\(script)' start '\(directory)' >'\(directory).out' 2>'\(directory).err' </dev/null")
        let out = (try? String(contentsOfFile: directory + ".out", encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: directory + ".err", encoding: .utf8)) ?? ""
        unlink(directory + ".out")
        unlink(directory + ".err")
        guard status == 0 else {
            return .failure(TestFailure("no PostgreSQL for the tests (\(script) start failed): \(err)"))
        }
        stopAtExit(script: script, directory: directory)
        return .success(out.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private static func stopAtExit(script: String, directory: String) {
        pgTempScript = script
        pgTempDirectory = directory
        atexit {
            _ = system("'\(pgTempScript)' destroy '\(pgTempDirectory)' >/dev/null 2>&1")
        }
    }
}

nonisolated(unsafe) private var pgTempScript = ""
nonisolated(unsafe) private var pgTempDirectory = ""

/// Opens a store of `backend`: SQLite in `directory`, PostgreSQL in `conninfo`.
func openStore(_ backend: StoreBackend, directory: String, conninfo: String?) throws -> RelayStore {
    switch backend {
    case .sqlite: return try SQLiteRelayStore(directory: directory)
    case .postgres: return try PostgresRelayStore(conninfo: conninfo ?? "", directory: directory)
    }
}
