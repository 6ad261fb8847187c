import Glibc
import YaOKSupport
import YaOKSystem
import YaOKWire
import YaOKCrypto
import YaOKTLS

/// One simulated relay client: a raw protocol session (no node) on a non-blocking socket,
/// driven by the runner's epoll loop. Its pseudonym and mailbox key live as long as the
/// run; each connection is a new session (CHALLENGE, AUTH, READY, SUBSCRIBE, SUBSCRIBED).
final class Client {
    enum State { case idle, connecting, handshaking, awaitChallenge, awaitReady, awaitSubscribed, ready }

    let index: Int
    let pseudonym: SigningKey
    let mailboxKey: SigningKey
    let mailbox: MailboxID
    unowned let runner: Runner

    private(set) var state: State = .idle
    private(set) var fd: Int32 = -1
    private var tls: TLSConnection?
    private var decoder = try! FrameDecoder(maxLength: RelayFrame.maxLength)
    private var out: [UInt8] = []
    private var outOffset = 0
    private var binding: [UInt8] = []
    private var nonce: [UInt8] = []
    var stateSinceNs: UInt64 = 0
    var lastSendNs: UInt64 = 0
    /// When it may try to connect again (backoff), and the current backoff.
    var retryAtNs: UInt64 = 0
    var backoffMs: Double = 50
    var holdUntilNs: UInt64 = 0

    private var nextRequest: UInt32 = 1
    /// POSTs sent in this session and not yet answered: request → message.
    private(set) var inflight: [UInt32: Int32] = [:]
    /// Messages this client still has to post (load mode: its share; any mode: re-posts).
    var queue: [Int32] = []
    var queueHead = 0
    /// Message IDs delivered in the current session (a second copy in one session is a fault
    /// unless the message was posted again meanwhile).
    var sessionSeen: Set<MessageID> = []
    var pendingDeletes: [StoredPacketRef] = []
    var sessions = 0
    var needsFlush = false

    init(index: Int, runner: Runner) throws {
        self.index = index
        self.runner = runner
        pseudonym = try SigningKey.random()
        mailboxKey = try SigningKey.random()
        mailbox = try MailboxID(bytes: mailboxKey.publicKey)
    }

    var isReady: Bool { state == .ready }
    var inflightCount: Int { inflight.count }
    var queued: Int { queue.count - queueHead }
    var isConnectingOrHandshaking: Bool { state != .idle && state != .ready }

    // MARK: Connecting

    func connect(host: UInt32, port: UInt16, now: UInt64) {
        switch Socket.connectTCP(Socket.ipv4(address: host, port: port)) {
        case .success(let descriptor):
            fd = descriptor
        case .failure(let failure):
            runner.noteConnectFailure(self, reason: failure.description)
            scheduleRetry(now: now)
            return
        }
        state = .connecting
        stateSinceNs = now
        decoder = try! FrameDecoder(maxLength: RelayFrame.maxLength)
        out.removeAll(keepingCapacity: false)
        outOffset = 0
        sessionSeen.removeAll()
        pendingDeletes.removeAll()
        guard runner.poller.add(fd, token: UInt64(index)) else {
            fail("epoll_ctl: \(Socket.reason(errno))", now: now)
            return
        }
    }

    private func scheduleRetry(now: UInt64) {
        let jitter = Double.random(in: 0.5...1.5)
        retryAtNs = now + UInt64(backoffMs * jitter * 1e6)
        backoffMs = min(backoffMs * 2, 1000)
    }

    /// Ends the connection; in-flight POSTs go back to the queue (posted again next session).
    func fail(_ reason: String, now: UInt64, counted: Bool = true) {
        guard state != .idle else { return }
        if counted { runner.noteDisconnect(self, reason: reason, wasReady: state == .ready) }
        if fd >= 0 {
            runner.poller.remove(fd)
            tls?.close()
            tls = nil
            close(fd)
            fd = -1
        }
        for (_, message) in inflight { requeue(message) }
        runner.inflightTotal -= inflight.count
        inflight.removeAll()
        state = .idle
        scheduleRetry(now: now)
    }

    func requeue(_ message: Int32) {
        if queueHead > 0 {
            queueHead -= 1
            queue[queueHead] = message
        } else {
            queue.insert(message, at: 0)
        }
    }

    // MARK: Events

    func onEvent(now: UInt64) {
        do {
            if state == .connecting {
                let code = Socket.pendingError(fd)
                if code == EINPROGRESS || code == EALREADY { return }
                guard code == 0 else {
                    runner.noteConnectFailure(self, reason: Socket.reason(code))
                    fail(Socket.reason(code), now: now, counted: false)
                    return
                }
                tls = try TLSConnection(client: runner.tlsContext, fd: fd, serverName: runner.hostName)
                state = .handshaking
                stateSinceNs = now
            }
            if state == .handshaking {
                guard let tls else { return }
                switch try tls.handshake() {
                case .wantRead, .wantWrite: return
                case .done:
                    binding = try tls.exportKeyingMaterial(label: RelaySignedData.exporterLabel, length: 32)
                    state = .awaitChallenge
                    stateSinceNs = now
                }
            }
            try readAvailable(now: now)
            try flush(now: now)
        } catch {
            fail("\(error)", now: now)
        }
    }

    private func readAvailable(now: UInt64) throws {
        guard let tls else { return }
        while state != .idle {
            switch try tls.read(maxBytes: 65536) {
            case .wantRead, .wantWrite:
                return
            case .closed:
                fail("the relay closed the connection", now: now)
                return
            case .data(let bytes):
                for payload in try decoder.feed(bytes) {
                    try handle(try RelayFrame.decode(payload), now: now)
                    if state == .idle { return }
                }
            }
        }
    }

    private func handle(_ frame: RelayFrame, now: UInt64) throws {
        switch frame {
        case .challenge(let challenge, _):
            // The relay identifier is not needed: this tool's mailbox keys are random.
            guard state == .awaitChallenge else { throw ToolError("CHALLENGE in state \(state)") }
            nonce = challenge
            let signature = pseudonym.sign(RelaySignedData.auth(nonce: nonce, binding: binding))
            send(.auth(pseudonym: pseudonym.publicKey, signature: signature), now: now)
            state = .awaitReady
        case .ready:
            guard state == .awaitReady else { throw ToolError("READY in state \(state)") }
            let signed = RelaySignedData.subscribe(nonce: nonce, binding: binding, pseudonym: pseudonym.publicKey)
            let proof = try MailboxProof(mailbox: mailbox, signature: mailboxKey.sign(signed))
            send(.subscribe([proof]), now: now)
            state = .awaitSubscribed
        case .subscribed(let count):
            guard state == .awaitSubscribed else { throw ToolError("SUBSCRIBED in state \(state)") }
            guard count == 1 else { throw ToolError("SUBSCRIBED \(count) for one mailbox") }
            state = .ready
            sessions += 1
            backoffMs = 50
            runner.clientReady(self, now: now)
        case .accepted(let request):
            guard let message = inflight.removeValue(forKey: request) else {
                runner.noteProtocolFault("ACCEPTED for unknown request \(request) (client \(index))")
                return
            }
            runner.inflightTotal -= 1
            runner.accepted(message, by: self, now: now)
        case .deliver(let box, let packet):
            guard box == mailbox else {
                runner.noteProtocolFault("DELIVER for a mailbox client \(index) did not subscribe")
                return
            }
            runner.delivered(packet, to: self, now: now)
        case .pong:
            break
        case .error(let e):
            if e.request == 0 {
                runner.noteSessionError(e)
                fail("ERROR \(e.code) on the session: \(e.message)", now: now, counted: false)
            } else if let message = inflight.removeValue(forKey: e.request) {
                runner.inflightTotal -= 1
                runner.requestError(e, message: message, client: self, now: now)
            } else {
                runner.noteProtocolFault("ERROR for unknown request \(e.request)")
            }
        default:
            throw ToolError("Unexpected frame from the relay: \(frame)")
        }
    }

    // MARK: Sending

    func send(_ frame: RelayFrame, now: UInt64) {
        out += try! Frame.encode(frame.encode(), maxLength: RelayFrame.maxLength)
        lastSendNs = now
        runner.markDirty(self)
    }

    func sendKeepalive(now: UInt64) {
        out += Frame.keepalive
        lastSendNs = now
        runner.markDirty(self)
    }

    /// Posts `message` (its packet from the runner) to `recipient`'s mailbox, signed with its
    /// key as the relay requires (§8.3), and tracks the request.
    func post(_ message: Int32, packet: [UInt8], to recipient: Client, now: UInt64) {
        let request = nextRequest
        nextRequest = nextRequest == UInt32.max ? 1 : nextRequest + 1
        inflight[request] = message
        runner.inflightTotal += 1
        let signature = recipient.mailboxKey.sign(RelaySignedData.post(packet: packet))
        send(.post(request: request, mailbox: recipient.mailbox, signature: signature, packet: packet), now: now)
    }

    /// Sends the DELETEs collected from DELIVERs (at most 256 per frame).
    func flushDeletes(now: UInt64) {
        guard state == .ready, !pendingDeletes.isEmpty else { return }
        var start = 0
        while start < pendingDeletes.count {
            let end = min(start + RelayFrame.maxDeletePerFrame, pendingDeletes.count)
            send(.delete(Array(pendingDeletes[start..<end])), now: now)
            start = end
        }
        runner.deletesSent += pendingDeletes.count
        pendingDeletes.removeAll(keepingCapacity: true)
    }

    /// Hands buffered frames to TLS until it would block.
    func flush(now: UInt64) throws {
        guard let tls, tls.isHandshakeComplete else { return }
        while outOffset < out.count {
            switch try tls.write(out[outOffset...]) {
            case .wrote(let n): outOffset += n
            case .wantRead, .wantWrite: return
            }
        }
        out.removeAll(keepingCapacity: out.capacity <= 1 << 16)
        outOffset = 0
    }

    func flushSafely(now: UInt64) {
        do { try flush(now: now) } catch { fail("\(error)", now: now) }
    }
}
