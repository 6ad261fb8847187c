import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The transport manager and diagnostics (US-050, US-060).
extension Node {
    /// Registers a transport, disabled. A second one with the same name: `invalidArgument`.
    public func addTransport(_ transport: Transport) throws {
        try withStore { _, s in
            guard s.delivery.transports[transport.name] == nil else {
                throw YaOKError(.invalidArgument, "A transport named \(transport.name) is already registered")
            }
            s.delivery.transports[transport.name] = TransportEntry(transport: transport)
        }
    }

    /// Starts or stops a registered transport. A start that fails leaves it `failed` with
    /// the reason (also in diagnostics and the event) and throws that error. Starting one
    /// that is running changes nothing (a second start moved the relay client to a new
    /// session without closing the first: its carrier's posts went nowhere).
    public func setTransport(_ name: String, enabled: Bool) throws {
        try transportSwitching.withLock { _ in try switchTransport(name, enabled: enabled) }
    }

    private func switchTransport(_ name: String, enabled: Bool) throws {
        let running: Bool
        let transport: Transport
        (transport, running) = try withStore { _, s in
            guard let entry = s.delivery.transports[name] else { throw YaOKError(.notFound, "No transport named \(name)") }
            return (entry.transport, entry.phase == .running)
        }
        if enabled && running { return }
        var failure: Error?
        if enabled {
            // Reports during the start are kept (a relay says "connecting" at once).
            try withStore { _, s in
                s.delivery.transports[name]?.connection = nil
                s.delivery.transports[name]?.answered = nil
            }
            do { try transport.start(on: self) } catch { failure = error }
        } else {
            transport.stop()
        }
        let initial = enabled && failure == nil ? transport.connection : nil
        try withStore { _, s in
            guard var entry = s.delivery.transports[name] else { return }
            entry.phase = failure != nil ? .failed : (enabled ? .running : .disabled)
            entry.error = failure.map { "\($0)" }
            if !enabled || failure != nil {
                entry.connection = nil
                entry.answered = nil
            } else if entry.connection == nil {
                entry.connection = initial
            }
            s.delivery.transports[name] = entry
            guard let state = transportState(name, s) else { return }
            // Announced under the node's lock, in order with the transport's own reports; its
            // connection only if a report during the start or stop has not said it already.
            events.emit(.transportChanged(state))
            if state.connection != entry.announced {
                s.delivery.transports[name]?.announced = state.connection
                events.emit(.transportConnection(name: name, state.connection))
            }
        }
        connectivityChanged(startWatch: enabled && failure == nil)
        if let failure { throw failure }
    }

    /// Every registered transport with its state.
    public func transports() -> [TransportState] {
        (try? withStore { _, s in s.delivery.transports.keys.sorted().compactMap { transportState($0, s) } }) ?? []
    }

    private func transportState(_ name: String, _ s: NodeState) -> TransportState? {
        guard let entry = s.delivery.transports[name] else { return nil }
        return TransportState(name: name, displayName: entry.transport.displayName, phase: entry.phase, error: entry.error,
                              links: s.delivery.links.values.filter { $0.link.transport == name }.count
                                     + s.delivery.carriers.values.filter { $0.carrier.transport == name }.count,
                              lastActivity: entry.lastActivity, connection: connection(of: entry))
    }

    /// Not running: disconnected (disabled, or failed with the error). Running: what the
    /// transport reported, or connected for one that reports nothing (LAN, BLE, an app's).
    private func connection(of entry: TransportEntry) -> TransportConnection {
        switch entry.phase {
        case .disabled: return TransportConnection(state: .disconnected, reason: .disabled)
        case .failed: return TransportConnection(state: .disconnected, reason: .failed, detail: entry.error)
        case .running: return entry.connection ?? .connected
        }
    }

    /// Diagnostics as JSON (docs/ABI.md, "diagnostics"): transports, links, contacts'
    /// online status (when unlocked), the outbox (when unlocked), packets held while locked,
    /// and what the node carries for others.
    public func diagnostics() throws -> JSON {
        let base = try withStore { store, s -> (JSON, [(String, Transport)], Int, [(String, JSON)]) in
            let links = s.delivery.links.values.sorted { $0.link.id < $1.link.id }.map { l -> JSON in
                .object([("id", .int(Int64(l.link.id))), ("transport", .string(l.link.transport)),
                         ("state", .string(l.isOpen ? "open" : "handshake")),
                         ("contact_id", l.contactID.map { .int($0) } ?? .null),
                         // What recognition (§5.9) settled: "contact" (proved itself), "stranger"
                         // (anonymous, carrying only), "unknown" (not settled yet).
                         ("peer", .string(l.isOpen ? (l.link.peerIsContact.map { $0 ? "contact" : "stranger" } ?? "unknown") : "unknown")),
                         ("opened_ms", .int(l.openedAt)), ("last_received_ms", .int(l.lastReceived))])
            }
            // Present with null when there is nothing to say (docs/ABI.md's rule for fields).
            let extra: [(String, JSON)] = [
                ("clock_skew", s.delivery.lastClockSkew.map {
                    .object([("link_id", .int(Int64($0.link))), ("clock_skew_ms", .int($0.ms))])
                } ?? .null),
                ("held_error", s.delivery.heldError.map { .string($0) } ?? .null),
            ]
            return (.array(links), s.delivery.transports.map { ($0.key, $0.value.transport) }, try store.heldCount(), extra)
        }
        var transports: [JSON] = []
        for state in self.transports() {
            let details = base.1.first { $0.0 == state.name }?.1.diagnostics() ?? .null
            transports.append(.object([
                ("name", .string(state.name)), ("display_name", .string(state.displayName)),
                ("state", .string(state.phase.rawValue)), ("error", state.error.map { .string($0) } ?? .null),
                ("links", .int(Int64(state.links))), ("last_activity_ms", state.lastActivity.map { .int($0) } ?? .null),
                ("connection", state.connection.json),
                ("details", details),
            ]))
        }
        let running = self.transports().contains { $0.phase == .running }
        var fields: [(String, JSON)] = [
            ("transports", .array(transports)),
            ("warnings", .array(running ? [] : [.string(YaOKError(.noRoute).message)])),
            ("links", base.0),
            ("held_packets", .int(Int64(base.2))),
            ("internet", internet().json),
        ] + base.3
        // Guarded memory over the process (SecretSlab): regions whose mlock failed may be swapped.
        fields.append(("secure_memory", .object([("lock_failures", .int(Int64(SecureMemory.lockFailures))),
                                                 ("slab_regions", .int(Int64(SecureMemory.slabRegions)))])))
        // What the node carries for others (docs/ABI.md, "carry"); readable while locked.
        fields.append(("carry", (try? carryStatistics())?.json ?? .null))
        if let contacts = try? self.contacts(), let outbox = try? self.outbox() {
            fields.append(("contacts", .array(contacts.map { c in
                .object([("id", .int(c.id)), ("name", .string(c.name)), ("connection", c.connection.json),
                         ("forward_secrecy", (try? forwardSecrecy(c.id))?.json ?? .null)])
            })))
            fields.append(("outbox", .array(outbox.map(\.json))))
        }
        return .object(fields)
    }

    /// Stops every transport and closes every link (the node is closing).
    func stopDelivery() {
        let (transports, links) = state.withLock { s -> ([Transport], [Link]) in
            // Every one, not only the running ones: one whose first start is still waiting
            // (for a kernel, a network) would otherwise come up after the node closed.
            let t = s.delivery.transports.values.map(\.transport)
            let l = s.delivery.links.values.map(\.link)
            return (t, l)
        }
        for t in transports { t.stop() }
        for l in links { closeLink(l, reason: "The node is closing", notifyTransport: true) }
        closeCarriers(reason: "The node is closing")
    }

    /// Tells running transports the node was unlocked (a relay logs in again).
    func notifyTransportsUnlocked() {
        let running = (try? withStore { _, s in
            s.delivery.transports.values.filter { $0.phase == .running }.map(\.transport)
        }) ?? []
        for t in running { t.nodeUnlocked() }
    }
}

/// What transports tell the person through the node's events and security log.
extension Node {
    /// Emits `TRANSPORT_NOTICE` (a rate limit, a relay that will be retried at a time).
    public func emitNotice(_ notice: TransportNotice) {
        events.emit(.transportNotice(notice))
    }

    /// Writes a security event (a relay certificate that did not match its pin) and emits it.
    public func recordSecurityEvent(_ kind: SecurityEventKind, _ detail: String) {
        _ = try? withStore { store, _ in try logSecurityEvent(store, kind, detail) }
    }
}
