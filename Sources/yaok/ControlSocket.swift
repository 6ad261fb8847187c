import Glibc
import YaOK

/// The control socket of `yaok run`: how the other commands reach the node that `run`
/// holds open (a data directory can be opened by only one node at a time).
///
/// Where: `<home>/control.sock`, a Unix stream socket, mode 0600 from the start (bound under
/// umask 0177), inside the owner-only home directory. Who: the server checks each peer's
/// uid with SO_PEERCRED and drops any other uid; the client checks the server's uid too.
///
/// Protocol, one exchange per connection:
///
///     request  = u32 big-endian length (1…65536) + that many bytes of UTF-8 JSON object
///                {"cmd": "send" | "history" | "retry" | "outbox" | "status" | "transport"
///                 | "conversation" | "card", …arguments, "pin"?: string}
///     response = u32 big-endian length (≤ 64 MiB) + UTF-8 JSON: exactly what the direct
///                command prints with --json, or {"error": message, "status": code or null}
///
/// `conversation` ({"contact", "limit": 1…1000}) is what `yaok chat` polls, every 0.4 s
/// with limit 50 while it is open: the newest messages of one conversation (as `history`),
/// "contact_id", "contact", "deleted", the contact's "connection", and the node's
/// diagnostics "transports" and "warnings" (a relay's "details.status" says when it
/// retries). There is no push: one short exchange per poll, like every other request.
/// `card` answers {"card": text}: one's own card, so that `yaok card` needs no PIN while a
/// run holds the node unlocked.
///
/// The server closes the connection after its response. A request that is too large, not
/// JSON, or is not complete within `idleTimeout` seconds of connecting gets an error
/// response (when the client is still there to read it) and the connection is closed;
/// `run` itself carries on.
enum ControlSocket {
    static let fileName = "control.sock"
    static let maxRequestBytes = 64 * 1024
    static let maxResponseBytes = 64 * 1024 * 1024
    /// A client that sends nothing (or reads nothing) for this long is dropped.
    static let idleTimeout = 5.0
    /// At most this many clients at once; later ones are refused until one finishes.
    static let maxClients = 16

    static func path(home: String) -> String {
        home.hasSuffix("/") ? home + fileName : home + "/" + fileName
    }

    /// The 4-byte length prefix.
    static func frame(_ body: [UInt8]) -> [UInt8] {
        let n = UInt32(body.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + body
    }

    static func length(_ prefix: some Collection<UInt8>) -> Int {
        prefix.reduce(0) { $0 << 8 | Int($1) }
    }

    /// The error response body: the same object `Output` prints for a failed command.
    static func errorResponse(_ message: String, status: Int64?) -> JSON {
        .object([("error", .string(message)), ("status", status.map { .int($0) } ?? .null)])
    }

    static func errorResponse(for error: Error) -> JSON {
        switch error {
        case let e as YaOKError: return errorResponse(e.message, status: Int64(e.code.rawValue))
        case let e as CLIError: return errorResponse(e.message, status: e.status.map { Int64($0.rawValue) })
        default: return errorResponse(String(describing: error), status: nil)
        }
    }
}

/// A failure of the CLI itself (not the library's): a message for stderr and, when it
/// corresponds to one, a library status code for the JSON error object.
struct CLIError: Error, CustomStringConvertible {
    let message: String
    let status: YaOKError.Code?

    init(_ message: String, status: YaOKError.Code? = nil) {
        self.message = message
        self.status = status
    }

    var description: String { message }
}

/// Thin wrappers over the socket calls the control socket makes (Glibc names in the docs).
enum UnixSocket {
    /// The errno of the last failed call, as readable text.
    static func lastError(_ call: String) -> CLIError {
        CLIError("\(call): \(String(cString: strerror(errno)))")
    }

    /// Builds a `sockaddr_un` for `path` and calls `body` with it. A path longer than
    /// `sun_path` (108 bytes) is reached through its directory's descriptor,
    /// `/proc/self/fd/N/name`, so a deep home directory still works.
    static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) throws -> R {
        var dirFD: Int32 = -1
        defer { if dirFD >= 0 { close(dirFD) } }
        var target = path
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        if path.utf8.count >= capacity {
            let slash = path.lastIndex(of: "/") ?? path.startIndex
            let dir = String(path[..<slash]), name = String(path[path.index(after: slash)...])
            dirFD = open(dir.isEmpty ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard dirFD >= 0 else { throw lastError("open \(dir)") }
            target = "/proc/self/fd/\(dirFD)/\(name)"
            guard target.utf8.count < capacity else { throw CLIError("Socket name too long: \(name)") }
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in target.utf8.enumerated() { raw[i] = b }
            raw[target.utf8.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A new stream socket, close-on-exec (and non-blocking if asked).
    static func stream(nonBlocking: Bool = false) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                        | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0), 0)
        guard fd >= 0 else { throw lastError("socket") }
        return fd
    }

    /// `struct ucred` of <sys/socket.h>, which Glibc's Swift module leaves out (it is
    /// behind _GNU_SOURCE); the layout is fixed by the Linux ABI.
    private struct PeerCredentials {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
    }

    /// The uid of the process at the other end (getsockopt SO_PEERCRED), nil if unknown.
    static func peerUID(_ fd: Int32) -> uid_t? {
        var cred = PeerCredentials()
        var size = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) == 0,
              size == socklen_t(MemoryLayout<PeerCredentials>.size) else {
            return nil
        }
        return cred.uid
    }

    /// accept(2), then non-blocking and close-on-exec (accept4 is behind _GNU_SOURCE too).
    static func accept(_ listenFD: Int32) -> Int32? {
        let fd = Glibc.accept(listenFD, nil, nil)
        guard fd >= 0 else { return nil }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// Connects to `path`: the descriptor, or nil when nothing listens there (no file, or a
    /// stale one: ENOENT, ECONNREFUSED). Other failures (e.g. EACCES) throw.
    static func connect(to path: String) throws -> Int32? {
        let fd = try stream()
        let rc = try withAddress(path) { Glibc.connect(fd, $0, $1) }
        if rc == 0 { return fd }
        let error = errno
        close(fd)
        if error == ENOENT || error == ECONNREFUSED || error == ENOTDIR { return nil }
        errno = error
        throw lastError("connect \(path)")
    }
}
