import Glibc
import YaOK

/// Serves the control socket (protocol in `ControlSocket`) for `yaok run`.
///
/// Threads: the server runs on a dedicated thread of its own — a second `EventLoop`, not
/// the node's. Requests call into the node (an unlock costs about a second of Argon2id, a
/// long history decrypts up to a thousand messages), and doing that on the node's event
/// thread would stall its transports, timers and event delivery meanwhile; the node's
/// methods may be called from any thread, so a separate thread costs nothing in safety.
/// Sockets are non-blocking and serviced with epoll, so one slow client never holds up
/// another beyond the time its own request takes to handle; `handler` is called on that
/// thread, one request at a time.
final class ControlServer: Sendable {
    /// Turns a parsed request into the response body. Runs on the server's thread; never
    /// throws (errors become `{"error": …}` responses).
    typealias Handler = @Sendable (JSON) -> JSON

    let path: String
    private let loop: EventLoop
    private let listenFD: Int32
    private let handler: Handler
    private let idleTimeout: Double
    /// The socket file this server made (device, inode): `stop` removes only that one.
    private let socketFile: (dev: UInt64, ino: UInt64)
    private let clients = Locked<[Int32: Client]>([:])
    private let stopped = Locked(false)

    /// Binds `path` (mode 0600), replacing a stale socket file there, and starts serving.
    /// Refuses when another server answers on `path`, or `path` is something other than a
    /// socket.
    init(path: String, idleTimeout: Double = ControlSocket.idleTimeout, handler: @escaping Handler) throws {
        self.path = path
        self.handler = handler
        self.idleTimeout = idleTimeout
        var st = stat()
        if lstat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFSOCK else {
                throw CLIError("\(path) exists and is not a socket; move it away first")
            }
            if let fd = try UnixSocket.connect(to: path) {
                close(fd)
                throw CLIError("Another `yaok run` is already serving \(path)")
            }
            unlink(path)  // stale: left by a run that was killed
        }
        let fd = try UnixSocket.stream(nonBlocking: true)
        // umask 0177 while binding: the socket file is created 0600, with no moment at a
        // wider mode. (umask is process-wide; nothing else in `run` creates files now.)
        let oldMask = umask(0o177)
        let bound = try UnixSocket.withAddress(path) { bind(fd, $0, $1) }
        let bindErrno = errno
        umask(oldMask)
        guard bound == 0 else {
            errno = bindErrno
            let error = UnixSocket.lastError("Cannot serve the control socket \(path)")
            close(fd)
            throw error
        }
        guard listen(fd, Int32(ControlSocket.maxClients)) == 0, stat(path, &st) == 0 else {
            let error = UnixSocket.lastError("Cannot serve the control socket \(path)")
            close(fd)
            unlink(path)
            throw error
        }
        socketFile = (UInt64(st.st_dev), UInt64(st.st_ino))
        listenFD = fd
        do {
            loop = try EventLoop()
        } catch {
            close(fd)
            unlink(path)
            throw error
        }
        do {
            try loop.register(fd: fd, for: .readable) { [weak self] _ in self?.acceptClients() }
        } catch {
            stop()  // fully initialised: stop undoes it all (and deinit's second stop is a no-op)
            throw error
        }
    }

    /// Stops serving: waits for a request being handled to finish, ends the server's
    /// thread, drops every client, closes the socket and removes its file (if it is still
    /// the one this server made). Idempotent. Not to be called from `handler`.
    func stop() {
        loop.stop()  // joins the thread: nothing below races with it
        let (first, open) = stopped.withLock { s -> (Bool, [Int32]) in
            defer { s = true }
            return (!s, s ? [] : clients.withLock { c in defer { c = [:] }; return Array(c.keys) })
        }
        guard first else { return }
        for fd in open { close(fd) }
        close(listenFD)
        var st = stat()
        if lstat(path, &st) == 0, UInt64(st.st_dev) == socketFile.dev, UInt64(st.st_ino) == socketFile.ino {
            unlink(path)
        }
    }

    deinit { stop() }

    // MARK: - On the server's thread

    private final class Client: @unchecked Sendable {
        // Touched only on the server's thread.
        var input: [UInt8] = []
        var output: [UInt8] = []
        var written = 0
        var timer: EventLoop.TimerID?
    }

    private func acceptClients() {
        while true {
            guard let fd = UnixSocket.accept(listenFD) else { return }  // EAGAIN: none left; other errors: try on the next wake-up
            guard UnixSocket.peerUID(fd) == getuid() else {
                close(fd)  // another user: not a word
                continue
            }
            let client = Client()
            let admitted = clients.withLock { c -> Bool in
                guard c.count < ControlSocket.maxClients else { return false }
                c[fd] = client
                return true
            }
            guard admitted else {
                reply(fd, ControlSocket.errorResponse("Too many control clients; try again", status: nil))
                close(fd)
                continue
            }
            do {
                try loop.register(fd: fd, for: .readable) { [weak self] events in self?.readable(fd, events) }
            } catch {
                clients.withLock { _ = $0.removeValue(forKey: fd) }
                close(fd)
                continue
            }
            armTimer(fd, client)
        }
    }

    /// (Re)starts the client's timer: at accept (the deadline for the whole request), and on
    /// each write of the response (a slow reader of a long answer is not cut off).
    private func armTimer(_ fd: Int32, _ client: Client) {
        if let t = client.timer { loop.cancel(t) }
        client.timer = loop.schedule(after: idleTimeout) { [weak self, weak client] in
            guard let self, let client, self.clients.withLock({ $0[fd] === client }) else { return }
            if client.output.isEmpty {
                self.reply(fd, ControlSocket.errorResponse("Timed out waiting for the request", status: nil))
            }
            self.drop(fd)
        }
    }

    private func readable(_ fd: Int32, _ events: EventLoop.IOEvents) {
        guard let client = clients.withLock({ $0[fd] }) else { return }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            return drop(fd)
        }
        if n == 0 { return drop(fd) }  // the client left before finishing its request
        client.input += chunk[..<n]
        // No re-arm while reading: the whole request must arrive within `idleTimeout` of the
        // connection, so a client trickling a byte at a time cannot hold a slot for ever.

        guard client.input.count >= 4 else { return }
        let length = ControlSocket.length(client.input.prefix(4))
        guard length >= 1, length <= ControlSocket.maxRequestBytes else {
            return respond(fd, client, ControlSocket.errorResponse(
                "Request too large (at most \(ControlSocket.maxRequestBytes) bytes)", status: Int64(YaOKError.Code.invalidArgument.rawValue)))
        }
        guard client.input.count >= 4 + length else { return }
        guard client.input.count == 4 + length else {
            return respond(fd, client, ControlSocket.errorResponse(
                "One request per connection", status: Int64(YaOKError.Code.invalidArgument.rawValue)))
        }
        let response: JSON
        do {
            response = handler(try JSONParser.parse(Array(client.input[4...])))
        } catch {
            response = ControlSocket.errorResponse("Malformed request: \(error)", status: Int64(YaOKError.Code.invalidArgument.rawValue))
        }
        respond(fd, client, response)
    }

    /// Queues the response and writes what the socket takes now; the rest when writable.
    private func respond(_ fd: Int32, _ client: Client, _ response: JSON) {
        var body = Array(response.serialized.utf8)
        if body.count > ControlSocket.maxResponseBytes {
            body = Array(ControlSocket.errorResponse("Response too large; ask for less (e.g. --limit)", status: nil).serialized.utf8)
        }
        client.input = []
        client.output = ControlSocket.frame(body)
        loop.unregister(fd: fd)
        shutdown(fd, Int32(SHUT_RD))
        guard flush(fd, client) else { return }
        do {
            try loop.register(fd: fd, for: .writable) { [weak self] _ in
                guard let self, let client = self.clients.withLock({ $0[fd] }) else { return }
                _ = self.flush(fd, client)
            }
        } catch {
            drop(fd)
        }
    }

    /// Writes pending output; drops the client when done or broken. Returns whether output
    /// is still pending.
    private func flush(_ fd: Int32, _ client: Client) -> Bool {
        while client.written < client.output.count {
            let n = client.output[client.written...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { return true }
                drop(fd)
                return false
            }
            client.written += n
            armTimer(fd, client)
        }
        drop(fd)
        return false
    }

    /// Best effort, for clients turned away before they are registered.
    private func reply(_ fd: Int32, _ response: JSON) {
        let bytes = ControlSocket.frame(Array(response.serialized.utf8))
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }

    private func drop(_ fd: Int32) {
        guard let client = clients.withLock({ $0.removeValue(forKey: fd) }) else { return }
        if let t = client.timer { loop.cancel(t) }
        loop.unregister(fd: fd)
        close(fd)
    }
}
