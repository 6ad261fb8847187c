import Glibc
import YaOKSupport
import YaOKSystem
import YaOKLoop
import YaOKWire
import YaOKNode
import YaOKTLS

/// Connecting, TLS, reading and writing frames, timeouts and backoff. Runs on the node's
/// loop; the node is never called while the transport's lock is held.
extension RelayTransport {
    func connect() {
        guard let (generation, loop) = state.withLock({ s -> (UInt64, EventLoop)? in
            guard s.running, let loop = s.loop, s.fd < 0 else { return nil }
            s.generation &+= 1
            s.phase = .connecting
            s.nextRetryAt = nil
            return (s.generation, loop)
        }) else { return }
        publishConnection()
        let address = self.address
        // getaddrinfo blocks: resolve on a thread of its own, then continue on the loop.
        let resolve: @Sendable () -> Void = { [weak self] in
            let endpoint = Result { try address.resolve() }
            loop.post { [weak self] in self?.connect(to: endpoint, generation: generation) }
        }
        if IPv4Endpoint.parseAddress(address.host) != nil {
            resolve()
        } else {
            detachThread(resolve)
        }
    }

    private func connect(to endpoint: Result<IPv4Endpoint, Error>, generation: UInt64) {
        if case .failure(let error) = endpoint {
            let resolving = state.withLock { $0.running && $0.generation == generation }
            if resolving { fail(generation, YaOKError.relay(error, address: address), reason: .dns) }
            return
        }
        let outcome: Error? = state.withLock { s in
            guard s.running, s.generation == generation, let loop = s.loop else { return nil }
            do {
                let fd = try Socket.startConnect(to: try endpoint.get())
                s.fd = fd
                s.writeBuffer = []
                s.decoder = try FrameDecoder(maxLength: RelayFrame.maxLength)
                s.lastReceived = EventLoop.monotonicNanoseconds()
                s.lastSent = s.lastReceived
                try loop.register(fd: fd, for: [.readable, .writable]) { [weak self] events in
                    self?.ready(events, generation: generation)
                }
                s.wantsWritable = true
                s.connectTimer = loop.schedule(after: options.connectTimeout) { [weak self] in
                    self?.connectTimedOut(generation)
                }
                return nil
            } catch {
                return error
            }
        }
        if let outcome { fail(generation, YaOKError.relay(outcome, address: address)) }
    }

    private func connectTimedOut(_ generation: UInt64) {
        let stuck = state.withLock { s in s.generation == generation && s.phase != .connected && s.fd >= 0 }
        if stuck { fail(generation, YaOKError(.relayUnavailable, "Timed out connecting to the relay \(address)"), reason: .timedOut) }
    }

    /// The descriptor is ready: finish connecting, drive TLS, read frames, write.
    private func ready(_ events: EventLoop.IOEvents, generation: UInt64) {
        var frames: [RelayFrame] = []
        var failure: YaOKError?
        var peerClosed = false
        state.withLock { s in
            guard s.generation == generation, s.fd >= 0 else { return }
            do {
                if s.phase == .connecting {
                    let code = Socket.pendingError(s.fd)
                    guard code == 0 else {
                        throw YaOKError(.relayUnavailable, "Cannot connect to the relay \(address): \(Socket.reason(code))")
                    }
                    s.tls = try TLSConnection(client: context, fd: s.fd, serverName: address.host)
                    s.phase = .handshaking
                }
                if s.phase == .handshaking {
                    guard let tls = s.tls else { return }
                    switch try tls.handshake() {
                    case .wantRead: setWritableLocked(&s, false); return
                    case .wantWrite: setWritableLocked(&s, true); return
                    case .done:
                        s.binding = try tls.exportKeyingMaterial(label: RelaySignedData.exporterLabel, length: 32)
                        s.phase = .authenticating
                    }
                }
                (frames, peerClosed) = try readFramesLocked(&s)
                if !peerClosed { try flushLocked(&s) }
            } catch let error as YaOKError {
                failure = error
            } catch {
                failure = YaOKError(.tlsFailed, "\(error)")
            }
        }
        if let failure { return fail(generation, failure) }
        if !frames.isEmpty { handle(frames, generation: generation) }
        // The relay's last frames (an ERROR: revoked, session expired) come with its close in
        // one read: they are handled first, and decide what the close means.
        if peerClosed { fail(generation, YaOKError(.relayUnavailable, "The relay closed the connection")) }
    }

    /// Everything TLS has decrypted, as frames (a read returns at most one record), and
    /// whether the relay closed the connection after them.
    private func readFramesLocked(_ s: inout RelayState) throws -> ([RelayFrame], closed: Bool) {
        guard let tls = s.tls else { return ([], false) }
        var frames: [RelayFrame] = []
        reading: while true {
            switch try tls.read(maxBytes: 16_384) {
            case .data(let bytes):
                s.lastReceived = EventLoop.monotonicNanoseconds()
                for frame in try s.decoder.feed(bytes) { frames.append(try RelayFrame.decode(frame)) }
                // Bound what one wake-up processes; level-triggered epoll calls again.
                if frames.count >= 512 { break reading }
            case .wantRead: break reading
            case .wantWrite: setWritableLocked(&s, true); break reading
            case .closed: return (frames, true)
            }
        }
        return (frames, false)
    }

    /// Queues a frame and writes what the socket takes.
    func sendLocked(_ s: inout RelayState, _ frame: RelayFrame) throws {
        s.writeBuffer += try Frame.encode(frame.encode(), maxLength: RelayFrame.maxLength)
        guard s.writeBuffer.count <= options.maxWriteQueue else {
            throw YaOKError(.relayUnavailable, "The relay is not reading (over \(options.maxWriteQueue) bytes waiting)")
        }
        try flushLocked(&s)
    }

    func flushLocked(_ s: inout RelayState) throws {
        guard let tls = s.tls, tls.isHandshakeComplete else { return }
        var written = 0
        defer { if written > 0 { s.writeBuffer.removeFirst(written) } }
        while written < s.writeBuffer.count {
            switch try tls.write(s.writeBuffer[written...]) {
            case .wrote(let n):
                written += n
                s.lastSent = EventLoop.monotonicNanoseconds()
            case .wantRead, .wantWrite:
                setWritableLocked(&s, true)
                return
            }
        }
        setWritableLocked(&s, false)
    }

    /// Watches for writability only while something waits to be written (level-triggered).
    private func setWritableLocked(_ s: inout RelayState, _ writable: Bool) {
        guard s.wantsWritable != writable, let loop = s.loop, s.fd >= 0 else { return }
        try? loop.modify(fd: s.fd, for: writable ? [.readable, .writable] : .readable)
        s.wantsWritable = writable
    }

    /// Every few seconds while connected: a PING after silence, a drop after long silence.
    func scheduleTickLocked(_ s: inout RelayState) {
        let generation = s.generation
        s.tickTimer = s.loop?.schedule(after: min(5, options.pingAfter / 2)) { [weak self] in self?.tick(generation) }
    }

    private func tick(_ generation: UInt64) {
        var failure: YaOKError?
        state.withLock { s in
            guard s.generation == generation, s.fd >= 0 else { return }
            let now = EventLoop.monotonicNanoseconds()
            if Double(now &- s.lastReceived) / 1e9 > options.idleTimeout {
                failure = YaOKError(.relayUnavailable, "The relay stopped answering")
                return
            }
            if Double(now &- s.lastSent) / 1e9 > options.pingAfter {
                do { try sendLocked(&s, .ping(request: 0)) } catch { failure = YaOKError.relay(error, address: address) }
            }
            scheduleTickLocked(&s)
        }
        if let failure { fail(generation, failure) }
    }

    /// Closes the socket and TLS; the caller handles the carrier.
    func closeConnectionLocked(_ s: inout RelayState) {
        for t in [s.tickTimer, s.connectTimer].compactMap({ $0 }) { s.loop?.cancel(t) }
        s.tickTimer = nil
        s.connectTimer = nil
        s.tls?.close()
        s.tls = nil
        if s.fd >= 0 {
            s.loop?.unregister(fd: s.fd)
            Socket.close(s.fd)
        }
        s.fd = -1
        s.wantsWritable = false
        s.writeBuffer = []
        s.requests = [:]
        s.delivered = [:]
        s.subscribed = []
    }

    /// The connection failed or ended: close it, end the carrier, and retry after a
    /// backoff (doubling, with jitter) — or not at all for a revoked pseudonym.
    /// `reason`: what kind of failure it is for the transport's connection state; nil:
    /// read from the error (`RelayTransport.reason(of:)`).
    func fail(_ generation: UInt64, _ error: YaOKError, retryAt once: Bool = false, reason: TransportConnection.Reason? = nil) {
        let (carrier, node, delay) = state.withLock { s -> (Carrier?, Node?, Double?) in
            guard s.generation == generation, s.running else { return (nil, nil, nil) }
            closeConnectionLocked(&s)
            s.generation &+= 1
            s.lastError = error.message
            s.lastReason = reason ?? RelayTransport.reason(of: error)
            let carrier = s.carrier
            s.carrier = nil
            if error.code == .revoked {
                s.phase = .revoked
                return (carrier, s.node, nil)
            }
            // A session that lived a while and was used (it subscribed or posted) was a
            // success: the backoff starts over. One the relay ended for doing nothing backs
            // off further each time rather than log in again every half minute.
            let lived = s.readyAt.map { Double(EventLoop.monotonicNanoseconds() &- $0) / 1e9 } ?? 0
            if lived >= 30 && s.sessionUsed { s.failures = 0 }
            s.readyAt = nil
            s.failures = once ? 0 : s.failures + 1
            let base = once ? 0 : min(options.maxBackoff, options.minBackoff * Double(1 << min(s.failures - 1, 16)))
            let delay = base == 0 ? 0 : base * Double.random(in: 0.5...1.0)
            s.phase = .waiting
            s.nextRetryAt = Clock.milliseconds() + Int64(delay * 1000)
            let next = s.generation
            s.retryTimer = s.loop?.schedule(after: delay) { [weak self] in
                guard let self else { return }
                let due = self.state.withLock { $0.generation == next && $0.running && $0.phase == .waiting }
                if due { self.connect() }
            }
            return (carrier, s.node, delay)
        }
        carrier?.close(reason: error.message)
        guard let node else { return }
        publishConnection()
        // A wrong certificate is logged and announced once until a session succeeds again
        // (it is retried with backoff: the relay may be fixed, or the attacker leave).
        let firstRejection = error.code == .certificateRejected && state.withLock { s in
            defer { s.certificateRejectionLogged = true }
            return !s.certificateRejectionLogged
        }
        if firstRejection {
            node.recordSecurityEvent(.tlsFailure, "Relay \(address): \(error.message)")
        }
        if error.code == .revoked || firstRejection || (error.code != .certificateRejected && (delay ?? 0) >= options.minBackoff * 4) {
            // Said once it matters, not on every quick retry.
            let retry = delay.map { " Retrying in \(Int($0.rounded(.up))) s." } ?? ""
            let what = error.message.contains(address.description) ? error.message : "Relay \(address): \(error.message)"
            node.emitNotice(TransportNotice(transport: name, message: "\(what).\(retry)",
                                            retryAfterMs: delay.map { Int64($0 * 1000) }))
        }
    }
}

extension RelayTransport {
    /// The kind of a connection failure, for the transport's connection state. The socket
    /// layer's errors carry strerror text, so refusals and unreachable hosts are told by it.
    static func reason(of error: YaOKError) -> TransportConnection.Reason {
        switch error.code {
        case .certificateRejected:
            return error.message.contains("pinned key") ? .pinMismatch : .certificate
        case .tlsFailed: return .tls
        case .revoked: return .revoked
        case .malformedPacket: return .protocolError
        default: break
        }
        let text = error.message.lowercased()
        if text.contains("refused") { return .refused }
        if text.contains("timed out") { return .timedOut }
        if text.contains("unreachable") { return .unreachable }
        if text.contains("closed the connection") || text.contains("reset by peer") { return .closed }
        return .other
    }
}

extension YaOKError {
    /// A socket or resolver failure as a relay error (anything not already a YaOKError of ours).
    static func relay(_ error: Error, address: RelayAddress) -> YaOKError {
        guard let e = error as? YaOKError else { return YaOKError(.relayUnavailable, "Relay \(address): \(error)") }
        return e.code == .internal ? YaOKError(.relayUnavailable, e.message) : e
    }
}
