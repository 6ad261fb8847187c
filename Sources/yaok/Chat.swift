import ArgumentParser
import Foundation
import Glibc
import YaOK

/// `yaok chat CONTACT`: a conversation in the terminal. Shows the history, new messages as
/// they arrive and each message's status as a mark (… pending, ✓ sent, ✓✓ delivered,
/// ! failed); sends what is typed; `/retry` (or Ctrl-R) tries failed messages again.
///
/// Design: the chat polls. Every `pollInterval` it asks for a snapshot of the conversation
/// (the `conversation` request: the newest `historyLimit` messages, the contact's
/// connection, the transports) and redraws what changed. When a `yaok run` serves this home
/// the request goes over its control socket, one short exchange like any other command;
/// otherwise the chat opens the node itself, starts the transports given by the same flags
/// as `run`, and also redraws at once when the node reports an event. One thread, one
/// loop (poll(2) on the keyboard, a signal pipe and, here, a wake-up pipe), no streaming
/// protocol to keep in step: the cost is at most one request per 0.4 s while it is open.
struct Chat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Talk with a contact in the terminal: history, new messages as they arrive, statuses.",
        discussion: """
        Through the running `yaok run` for this home when there is one (its transports carry the \
        messages); otherwise the chat opens the node itself with the transports given here \
        (the same flags as `run`). Keys: Enter sends, /retry or Ctrl-R tries failed messages \
        again, /help lists the rest, Ctrl-C leaves. The chat reads the conversation several \
        times a second; those reads do not count as activity, so an unattended chat still \
        auto-locks (it then asks for the PIN).
        """)

    @OptionGroup var options: GlobalOptions

    @Argument(help: "ID, name, user ID or fingerprint prefix.") var contact: String

    @OptionGroup(title: "Transports (used when the chat opens the node itself, with no run for this home)") var transports: TransportOptions

    static let pollInterval = 0.4
    static let historyLimit = 50

    func validate() throws {
        if options.json { throw ValidationError("`yaok chat` is interactive: --json is for the other commands (send, history)") }
    }

    func run() throws {
        try Output.run(json: false) {
            do { try chat() } catch let ended as ChatEnded { throw CLIError(ended.message) }
        }
    }

    private func chat() throws {
        ShutdownSignal.unblock()  // before the node's threads start: they inherit the mask
        let terminal = try ChatTerminal()
        let session = try ChatSession(terminal: terminal, peer: try connect(), contact: contact)
        defer { session.close() }
        if case .remote = session.peer, transports.any {
            session.notice = "Using the running `yaok run` and its transports: --lan/--relay are not needed"
        }
        try session.refresh(throwing: true)  // a wrong name ends here, before the screen changes
        if case .local(let node) = session.peer {
            _ = try transports.start(on: node)
            session.listenForEvents()
        }
        let signals = try ShutdownSignal.install(ShutdownSignal.signals + [SIGWINCH])
        try terminal.enterRaw()
        defer { terminal.restore() }
        try session.loop(signals: signals)
    }

    /// The running `yaok run` for this home, else the node opened here (and unlocked).
    private func connect() throws -> ChatSession.Peer {
        let socket = ControlSocket.path(home: options.dataDirectory)
        if ControlClient.isServing(socket) { return .remote(ControlClient(path: socket)) }
        let node: Node
        do {
            node = try options.openNode()
        } catch let error as YaOKError where error.code == GlobalOptions.busyCode {
            // A `yaok run` that has not opened its control socket yet: wait for it a little.
            for _ in 0..<30 {
                usleep(100_000)
                if ControlClient.isServing(socket) { return .remote(ControlClient(path: socket)) }
            }
            throw error
        }
        do {
            try options.unlock(node)
        } catch {
            node.close()
            throw error
        }
        return .local(node)
    }
}

/// One chat: the peer it talks to, the editor, what is on the screen.
final class ChatSession {
    enum Peer {
        case remote(ControlClient)
        case local(Node)
    }

    let peer: Peer
    let terminal: ChatTerminal
    var editor = ChatEditor()
    var snapshot: ChatSnapshot?
    var notice: String?
    var overlay: [String] = []
    /// The contact as typed, then its ID once found (a rename cannot lose it).
    private var contact: String
    private var wake: (read: Int32, write: Int32)?

    init(terminal: ChatTerminal, peer: Peer, contact: String) throws {
        self.terminal = terminal
        self.peer = peer
        self.contact = contact
    }

    func close() {
        guard case .local(let node) = peer else { return }
        node.setEventHandler(nil)
        node.close()
        if let wake {
            Glibc.close(wake.read)
            Glibc.close(wake.write)
            self.wake = nil
        }
    }

    /// Local node: every event wakes the loop (a byte on a pipe), so what arrives shows at once.
    func listenForEvents() {
        guard case .local(let node) = peer else { return }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }  // then polling alone keeps the screen current
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        wake = (fds[0], fds[1])
        let writeFD = fds[1]
        node.setEventHandler { _ in
            var byte: UInt8 = 1
            _ = Glibc.write(writeFD, &byte, 1)  // full pipe: a wake-up is pending anyway
        }
    }

    // MARK: - Requests

    /// Runs `request` on the peer. A locked node (auto-lock) asks for the PIN, with the
    /// terminal back to normal meanwhile, and tries once more.
    func perform(_ request: PeerRequest) throws -> JSON {
        do {
            return try attempt(request, pin: nil)
        } catch let error as YaOKError where error.code == .locked {
            let pin = try terminal.cooked { () throws -> String in
                // Ctrl-C must end the prompt (and the chat): the default action while it runs.
                var original = sigaction(), fallback = sigaction()
                fallback.__sigaction_handler.sa_handler = SIG_DFL
                sigaction(SIGINT, &fallback, &original)
                defer { sigaction(SIGINT, &original, nil) }
                FileHandle.standardError.write(Data("Locked (auto-lock). Enter your PIN to go on (Ctrl-C leaves).\n".utf8))
                return try PINInput.pin(prompt: "PIN: ")
            }
            return try attempt(request, pin: pin)
        }
    }

    private func attempt(_ request: PeerRequest, pin: String?) throws -> JSON {
        switch peer {
        case .remote(let client):
            guard let result = try client.exchange(request.json(pin: pin)) else {
                throw ChatEnded("`yaok run` stopped serving this home; start it again and reopen the chat, "
                                + "or run `yaok chat` without it (with --lan or --relay)")
            }
            return try PeerClient.checked(result)
        case .local(let node):
            if let pin, try node.status().locked { try node.unlock(pin: pin) }
            return try request.perform(on: node)
        }
    }

    /// Reads the conversation again. Failures become the notice, unless `throwing` (the
    /// first read: a contact that does not exist ends the chat) or the peer went away.
    func refresh(throwing: Bool = false) throws {
        do {
            let fresh = ChatSnapshot(try perform(.conversation(contact: contact, limit: Chat.historyLimit)))
            contact = String(fresh.contactID)
            snapshot = fresh
        } catch let error as ChatEnded {
            throw error
        } catch {
            if throwing { throw error }
            notice = ChatSession.describe(error)
        }
    }

    static func describe(_ error: Error) -> String {
        switch error {
        case let e as YaOKError: return e.message
        case let e as CLIError: return e.message
        default: return "\(error)"
        }
    }

    // MARK: - The loop

    /// Until Ctrl-C, Ctrl-D, /quit or a signal.
    func loop(signals: ShutdownSignal) throws {
        draw(force: true)
        var nextPoll = Date().addingTimeInterval(Chat.pollInterval)
        while true {
            let timeout = Int32(max(0, nextPoll.timeIntervalSinceNow) * 1000) + 1
            var fds = [pollfd(fd: terminal.input, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: signals.readFD, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wake?.read ?? -1, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 {
                guard errno == EINTR else { throw UnixSocket.lastError("poll") }
                continue
            }
            var force = false
            if fds[1].revents != 0 {
                var byte: UInt8 = 0
                if Glibc.read(signals.readFD, &byte, 1) == 1 {
                    guard Int32(byte) == SIGWINCH else { return }  // SIGTERM, SIGHUP, SIGINT: leave
                    force = true
                }
            }
            if let wake, fds[2].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 256)
                while drain.withUnsafeMutableBytes({ Glibc.read(wake.read, $0.baseAddress, $0.count) }) > 0 {}
                nextPoll = .distantPast
            }
            if fds[0].revents != 0 {
                guard let bytes = terminal.read() else { return }  // the terminal went away
                if !bytes.isEmpty {
                    switch handle(bytes) {
                    case .leave: return
                    case .redraw: force = true
                    case .refresh: nextPoll = .distantPast
                    case .none: break
                    }
                }
            }
            if nextPoll.timeIntervalSinceNow <= 0 {
                try refresh()
                nextPoll = Date().addingTimeInterval(Chat.pollInterval)
            }
            draw(force: force)
        }
    }

    enum Outcome { case none, leave, redraw, refresh }

    func handle(_ bytes: [UInt8]) -> Outcome {
        notice = nil
        overlay = []
        var outcome = Outcome.none
        for action in editor.feed(bytes) {
            switch action {
            case .none, .dismiss: break
            case .leave: return .leave
            case .redraw: outcome = .redraw
            case .retry: if retryFailed() { outcome = .refresh }
            case .submit(let line):
                switch submit(line) {
                case .leave: return .leave
                case .refresh: outcome = .refresh
                default: break
                }
            }
        }
        if let refusal = editor.refusal {
            notice = refusal
            terminal.bell()
        }
        return outcome
    }

    private func submit(_ line: String) -> Outcome {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty {
            notice = "Nothing to send: type a message first (empty messages are not sent)"
            terminal.bell()
            return .none
        }
        if line.hasPrefix("//") { return send(String(line.dropFirst())) }
        guard trimmed.hasPrefix("/") else { return send(line) }
        switch trimmed.split(separator: " ").first.map(String.init) ?? "" {
        case "/help", "/?": overlay = ChatScreen.help
        case "/retry": editor.clear(); return retryFailed() ? .refresh : .none
        case "/quit", "/exit", "/q": return .leave
        case let other:
            notice = "Unknown command \(other): /help lists them (start with // to send a line beginning with /)"
            terminal.bell()
            return .none
        }
        editor.clear()
        return .none
    }

    private func send(_ text: String) -> Outcome {
        do {
            _ = try perform(.send(contact: contact, text: text))
            editor.clear()
            return .refresh
        } catch {
            notice = "Not sent: " + ChatSession.describe(error)
            terminal.bell()
            return .none
        }
    }

    /// Tries every failed message shown again; false (and a notice) when there is none.
    private func retryFailed() -> Bool {
        let failed = snapshot?.failed ?? []
        guard !failed.isEmpty else {
            notice = "No failed message to retry"
            return false
        }
        var errors: [String] = []
        for m in failed {
            do { _ = try perform(.retry(messageID: m.messageID)) } catch { errors.append(ChatSession.describe(error)) }
        }
        let n = failed.count - errors.count
        notice = errors.isEmpty ? "Retrying \(n) \(n == 1 ? "message" : "messages")" : "Retry: \(errors[0])"
        return true
    }

    private func draw(force: Bool = false) {
        let (rows, columns) = terminal.size
        terminal.draw(ChatScreen.frame(snapshot, input: editor.line, notice: notice, countdown: editor.countdown,
                                       overlay: overlay, rows: rows, columns: columns), force: force)
    }
}

/// The chat cannot go on (its `yaok run` went away): the message says what to do.
struct ChatEnded: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
