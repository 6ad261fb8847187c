import Glibc
import YaOK

/// The other side of the control socket (protocol in `ControlSocket`): one request, one
/// response, blocking with a timeout.
struct ControlClient {
    /// How long to wait for the whole answer: enough for an unlock (Argon2id) on a busy
    /// machine, and for a long history.
    static let timeout = 60.0

    let path: String

    /// Whether a server answers on `path` now (connects and hangs up).
    static func isServing(_ path: String) -> Bool {
        guard let fd = try? UnixSocket.connect(to: path) else { return false }
        close(fd)
        return true
    }

    /// Sends `request` and returns the parsed response; nil when nothing listens on `path`.
    /// A server run by another user is refused. (The parser keeps key order and the writer
    /// is the core's, so `serialized` reproduces the server's bytes.)
    func exchange(_ request: JSON) throws -> JSON? {
        guard let fd = try UnixSocket.connect(to: path) else { return nil }
        defer { close(fd) }
        guard let uid = UnixSocket.peerUID(fd), uid == getuid() else {
            throw CLIError("The control socket \(path) belongs to another user; not using it")
        }
        var tv = timeval(tv_sec: Int(ControlClient.timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))

        let body = Array(request.serialized.utf8)
        guard body.count <= ControlSocket.maxRequestBytes else {
            throw CLIError("Request too large for the control socket (at most \(ControlSocket.maxRequestBytes) bytes)",
                           status: .invalidArgument)
        }
        try writeAll(fd, ControlSocket.frame(body))
        let length = ControlSocket.length(try readExactly(fd, 4))
        guard length <= ControlSocket.maxResponseBytes else { throw CLIError("Control socket response too large") }
        let bytes = try readExactly(fd, length)
        do {
            return try JSONParser.parse(bytes)
        } catch {
            throw CLIError("Malformed control socket response: \(error)")
        }
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure("send")
            }
            offset += n
        }
    }

    private func readExactly(_ fd: Int32, _ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let n = out[offset...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure("recv")
            }
            if n == 0 { throw CLIError("`yaok run` closed the control socket without an answer") }
            offset += n
        }
        return out
    }

    private func failure(_ call: String) -> CLIError {
        if errno == EAGAIN || errno == EWOULDBLOCK {
            return CLIError("`yaok run` did not answer within \(Int(ControlClient.timeout)) seconds")
        }
        return UnixSocket.lastError("Control socket \(call)")
    }
}
