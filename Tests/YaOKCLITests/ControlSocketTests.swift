import Foundation
import Glibc
import Testing
@testable import yaok
import YaOK

/// The control socket of `yaok run` with a fake handler: framing, limits, timeouts, the
/// socket file's mode and life cycle. (The CLI tests drive it through real `yaok run`.)
/// Serialized: one test changes the process-wide umask.
@Suite(.serialized) struct ControlSocketTests {
    /// A fresh directory for one server; removed by the caller.
    static func directory(_ name: String = "ctl") throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("yaok-\(name)-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return dir
    }

    /// Echoes the request back inside {"echo": …}.
    static let echo: ControlServer.Handler = { request in .object([("echo", request)]) }

    /// A raw client: writes `bytes`, then reads until the server closes (or `timeout`).
    static func raw(_ path: String, _ bytes: [UInt8], timeout: Int = 5) throws -> [UInt8] {
        let fd = try #require(try UnixSocket.connect(to: path))
        defer { close(fd) }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        if !bytes.isEmpty {
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += chunk[..<n]
        }
        return out
    }

    /// The JSON body of a framed response.
    static func body(_ framed: [UInt8]) throws -> JSON {
        try #require(framed.count >= 4)
        #expect(ControlSocket.length(framed.prefix(4)) == framed.count - 4)
        return try JSONParser.parse(Array(framed[4...]))
    }

    @Test func aRequestGetsTheHandlersAnswer() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ControlServer(path: ControlSocket.path(home: dir), handler: Self.echo)
        defer { server.stop() }
        let request = JSON.object([("cmd", .string("send")), ("contact", .string("Bob")), ("text", .string("hi \"there\" ✓\n"))])
        let answer = try #require(try ControlClient(path: server.path).exchange(request))
        #expect(answer == .object([("echo", request)]))
        #expect(answer.serialized == #"{"echo":{"cmd":"send","contact":"Bob","text":"hi \"there\" ✓\n"}}"#)
    }

    @Test func theSocketIsOwnerOnlyEvenUnderAPermissiveUmask() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let old = umask(0)
        defer { umask(old) }
        let server = try ControlServer(path: ControlSocket.path(home: dir), handler: Self.echo)
        defer { server.stop() }
        var st = stat()
        #expect(lstat(server.path, &st) == 0)
        #expect(st.st_mode & S_IFMT == S_IFSOCK)
        #expect(st.st_mode & 0o777 == 0o600)
    }

    @Test func garbageOversizedAndEmptyRequestsGetErrorsAndTheServerCarriesOn() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ControlServer(path: ControlSocket.path(home: dir), handler: Self.echo)
        defer { server.stop() }

        let garbage = try Self.body(try Self.raw(server.path, ControlSocket.frame(Array("{not json".utf8))))
        #expect(garbage["error"]?.string?.hasPrefix("Malformed request") == true)
        #expect(garbage["status"]?.int == Int64(YaOKError.Code.invalidArgument.rawValue))

        let binary = try Self.body(try Self.raw(server.path, ControlSocket.frame([0xff, 0xfe, 0x00, 0x22])))
        #expect(binary["error"]?.string?.hasPrefix("Malformed request") == true)

        // A length prefix of 4 GiB: refused at once, nothing buffered.
        let huge = try Self.body(try Self.raw(server.path, [0xff, 0xff, 0xff, 0xff] + Array(repeating: UInt8(ascii: "x"), count: 1000)))
        #expect(huge["error"]?.string?.hasPrefix("Request too large") == true)

        let justOver = try Self.raw(server.path, ControlSocket.frame(Array(repeating: UInt8(ascii: " "), count: ControlSocket.maxRequestBytes + 1)))
        if !justOver.isEmpty {  // the server may reset the connection before we read
            #expect(try Self.body(justOver)["error"]?.string?.hasPrefix("Request too large") == true)
        }

        let empty = try Self.body(try Self.raw(server.path, [0, 0, 0, 0]))
        #expect(empty["error"]?.string?.hasPrefix("Request too large") == true)

        let two = try Self.body(try Self.raw(server.path, ControlSocket.frame(Array("{}".utf8)) + ControlSocket.frame(Array("{}".utf8))))
        #expect(two["error"]?.string == "One request per connection")

        // Deep nesting is refused, not recursed into.
        let deep = try Self.body(try Self.raw(server.path, ControlSocket.frame(Array(String(repeating: "[", count: 10_000).utf8))))
        #expect(deep["error"]?.string?.contains("nested too deeply") == true)

        // A request of exactly the maximum size is fine.
        let padding = String(repeating: " ", count: ControlSocket.maxRequestBytes - 2)
        let max = try Self.body(try Self.raw(server.path, ControlSocket.frame(Array(("{" + padding + "}").utf8))))
        #expect(max == .object([("echo", .object([]))]))

        // Still serving.
        #expect(try ControlClient(path: server.path).exchange(.object([("cmd", .string("status"))])) != nil)
    }

    @Test func anIdleClientIsDroppedWithoutHoldingUpOthers() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ControlServer(path: ControlSocket.path(home: dir), idleTimeout: 0.5, handler: Self.echo)
        defer { server.stop() }

        let idle = try #require(try UnixSocket.connect(to: server.path))
        defer { close(idle) }
        _ = [UInt8(0), 0].withUnsafeBytes { send(idle, $0.baseAddress, $0.count, 0) }  // half a length prefix
        // Another client is served meanwhile.
        let started = Date()
        #expect(try ControlClient(path: server.path).exchange(.object([])) == .object([("echo", .object([]))]))
        #expect(Date().timeIntervalSince(started) < 0.4)

        // The idle one gets a timeout error, then end of file.
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(idle, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(idle, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += chunk[..<n]
        }
        #expect(try Self.body(received)["error"]?.string == "Timed out waiting for the request")
        #expect(Date().timeIntervalSince(started) < 4)
    }

    @Test func aStaleSocketFileIsReplacedAndALiveOneIsNot() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = ControlSocket.path(home: dir)

        // A socket file with nobody listening, as a killed `run` leaves it.
        let fd = try UnixSocket.stream()
        #expect(try UnixSocket.withAddress(path) { bind(fd, $0, $1) } == 0)
        close(fd)
        #expect(!ControlClient.isServing(path))
        let server = try ControlServer(path: path, handler: Self.echo)
        #expect(ControlClient.isServing(path))

        // A second server on the same path is refused; the first keeps serving.
        #expect(throws: CLIError.self) { try ControlServer(path: path, handler: Self.echo) }
        #expect(try ControlClient(path: path).exchange(.object([])) != nil)

        // Stopping removes the file; a second stop is harmless.
        server.stop()
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try ControlClient(path: path).exchange(.object([])) == nil)
    }

    @Test func somethingElseAtThePathIsNotReplaced() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = ControlSocket.path(home: dir)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: CLIError.self) { try ControlServer(path: path, handler: Self.echo) }
        #expect(error.message.contains("is not a socket"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "mine")
    }

    @Test func aHomeDeeperThanSunPathStillWorks() throws {
        var dir = try Self.directory("deep")
        let root = dir
        defer { try? FileManager.default.removeItem(atPath: root) }
        dir += "/" + String(repeating: "d", count: 60) + "/" + String(repeating: "e", count: 60)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = ControlSocket.path(home: dir)
        #expect(path.utf8.count > 108)
        let server = try ControlServer(path: path, handler: Self.echo)
        defer { server.stop() }
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(try ControlClient(path: path).exchange(.object([("a", .int(1))])) == .object([("echo", .object([("a", .int(1))]))]))
    }

    @Test func manyClientsAtOnceAreAllAnswered() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ControlServer(path: ControlSocket.path(home: dir), handler: Self.echo)
        defer { server.stop() }
        let path = server.path
        let answers = try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<40 {
                group.addTask {
                    try ControlClient(path: path).exchange(.object([("i", .int(Int64(i)))])) == .object([("echo", .object([("i", .int(Int64(i)))]))])
                }
            }
            return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        // Clients beyond the limit at one instant are told to try again; none hang.
        #expect(answers > 0)
    }
}

@Suite struct JSONParserTests {
    @Test func keepsKeyOrderAndRoundTrips() throws {
        let text = #"{"z":1,"a":[true,false,null,-7,"\u00e9\ud83d\udd12\n\"\\/"],"m":{}}"#
        let value = try JSONParser.parse(text)
        #expect(value.serialized == #"{"z":1,"a":[true,false,null,-7,"é🔒\n\"\\/"],"m":{}}"#)
        #expect(value["a"]?.array?.count == 5)
        #expect(value["z"]?.int == 1)
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\"}", "01x", "1.5", "\"\\ud800\"", "\"a\u{01}\"", "nul", "{} {}", "\"\\q\""])
    func refusesMalformedText(_ text: String) {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(text) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xff, 0x22]) }
    }
}
