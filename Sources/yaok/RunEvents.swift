import YaOK

/// Turns the node's events into `yaok run`'s output lines. Called on the node's event
/// thread, one event at a time.
///
/// JSON lines, by "event":
///   message_received  contact_id, contact, message_id          "Bob: New message"
///   message_status    message_id, contact_id, contact, status  "Message to Bob: Delivered"
///   contact_online    contact_id, contact, transport           "Bob is online (WiFi)"
///   contact_offline   contact_id, contact                      "Bob is offline"
///   transport         name, display_name, state, error, links  "WiFi: running (1 link)"
///   connection        name, display_name, state, reason, detail, next_retry_ms
///                                                              "Relay: disconnected (refused): … Retrying in 8 s."
///   internet          available, line, default_route, relay, why  "Internet: Unavailable (the relay does not answer)"
///   locked            reason                                   "Locked (auto_lock)"
///   unlocked          method                                   "Unlocked"
///   security          kind, detail                             "Security: wrong_pin …"
///   carry             the carry figures (docs/ABI.md, "carry") "Carrying 3 packets (1.4 KB): …"
/// plus, from `run` itself: started, warning, stopped.
///
/// Names come from a list read once at the start (contacts cannot change while `run` holds
/// the data directory): reading them from the node per event would count as activity and
/// hold off auto-lock every time a message arrived.
final class EventPrinter: Sendable {
    private let node: Node
    private let out: EventOutput
    private let names: [Int64: String]
    /// Who was online at the last look, so that only changes are printed.
    private let online = Locked<[Int64: String]>([:])
    /// Each transport's last connection event, and the disconnect last printed: a connect is
    /// printed after "connecting" (a relay) or a printed disconnect, not when a transport
    /// starts connected (a LAN on a network); the same failure again on each retry is printed once.
    private let connections = Locked<[String: (state: TransportConnection.State, printed: TransportConnection?)]>([:])

    /// Call with the node unlocked (it reads the contacts' names).
    init(node: Node, out: EventOutput) throws {
        self.node = node
        self.out = out
        names = Dictionary(try node.contacts().map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
    }

    private func name(_ id: Int64) -> String { names[id] ?? "contact \(id)" }

    func print(_ event: NodeEvent) {
        switch event {
        case .messageReceived(let contactID, let messageID):
            let who = name(contactID)
            out.line(.object([("event", .string("message_received")), ("contact_id", .int(contactID)),
                              ("contact", .string(who)), ("message_id", .string(messageID.description))])) { "\(who): New message" }

        case .messageStatusChanged(let m) where m.direction == .outgoing:
            let who = name(m.conversationID)
            out.line(.object([("event", .string("message_status")), ("message_id", .string(m.messageID.description)),
                              ("contact_id", .int(m.conversationID)), ("contact", .string(who)),
                              ("status", .string(m.status.name))])) {
                "Message to \(who): \(PeerRequest.statusLabel(m.status.name))"
            }

        case .contactsChanged(let id):
            contactChanged(id)

        case .transportChanged(let t):
            out.line(.object([("event", .string("transport")), ("name", .string(t.name)),
                              ("display_name", .string(t.displayName)), ("state", .string(t.phase.rawValue)),
                              ("error", t.error.map { .string($0) } ?? .null), ("links", .int(Int64(t.links)))])) {
                var text = "\(t.displayName): \(t.phase.rawValue)"
                if let error = t.error { text += ": \(error)" }
                if t.phase == .running { text += " (\(t.links) \(t.links == 1 ? "link" : "links"))" }
                return text
            }

        case .transportNotice(let n):
            // In text, a notice that repeats the disconnect just printed (a relay's wrong pin is
            // announced as a notice too) is left out: one line per failure. JSON keeps it.
            if !out.json, let detail = connections.withLock({ $0[n.transport]?.printed?.detail }), n.message.contains(detail) {
                return
            }
            out.line(.object([("event", .string("notice")), ("transport", .string(n.transport)), ("message", .string(n.message)),
                              ("retry_after_ms", n.retryAfterMs.map { .int($0) } ?? .null)])) { n.message }

        case .transportConnection(let name, let c):
            connectionChanged(name, c)

        case .internetChanged(let i):
            out.line(.object([("event", .string("internet"))] + i.json.fields)) { "\(i.line) (\(i.why))" }

        case .locked(let reason):
            out.line(.object([("event", .string("locked")), ("reason", .string(reason))])) {
                reason == "auto_lock" ? "Locked (auto-lock); still receiving, held until the next unlock (the next command asks for the PIN)" : "Locked (\(reason))"
            }

        case .unlocked(let method):
            out.line(.object([("event", .string("unlocked")), ("method", .string(method))])) { "Unlocked" }

        case .security(let e):
            out.line(.object([("event", .string("security")), ("kind", .string(e.kind.rawValue)), ("detail", .string(e.detail))])) {
                "Security: \(e.kind.rawValue)\(e.detail.isEmpty ? "" : "  \(e.detail)")"
            }

        case .carryActivity(let c):
            out.line(.object([("event", .string("carry"))] + c.json.fields)) {
                "Carrying \(c.packetsHeld) \(c.packetsHeld == 1 ? "packet" : "packets") (\(c.bytesHeld) bytes): "
                    + "\(c.packetsTaken) taken, \(c.packetsHandedOn) handed on, \(c.messagesDeliveredThroughCarriers) received "
                    + "and \(c.acksThroughCarriers) delivered through carriers, \(c.packetsPurged) purged"
            }

        default:
            break  // messages stored: `history` shows them
        }
    }

    /// Prints a transport's connect and disconnect (with the reason and next retry);
    /// "connecting" itself is quiet, and so are switching on and off (the transport line
    /// says those).
    private func connectionChanged(_ name: String, _ c: TransportConnection) {
        let shown = connections.withLock { seen -> Bool in
            let before = seen[name]
            let shown: Bool
            switch c.state {
            case .connecting: shown = false
            // After "connecting" (a relay), or after a disconnect printed (Bluetooth back on).
            case .connected: shown = before?.state == .connecting || before?.printed != nil
            case .disconnected:
                let printed = before?.printed
                // The first report is shown only when it is about the medium (a LAN with no
                // network, a radio off): a relay's first is "connecting", and a transport
                // switched off or failed has its own line.
                let first = before == nil && (c.reason == .noNetwork || c.reason == .radioOff)
                shown = (first || before != nil && before?.state != .disconnected) && c.reason != .disabled && c.reason != .failed
                    && (printed?.reason != c.reason || printed?.detail != c.detail)
            }
            seen[name] = (c.state, c.state == .connected ? nil : (shown ? c : before?.printed))
            return shown
        }
        guard shown else { return }
        let display = node.transports().first { $0.name == name }?.displayName ?? name
        out.line(.object([("event", .string("connection")), ("name", .string(name)), ("display_name", .string(display))]
                         + c.json.fields)) {
            guard c.state == .disconnected else { return "\(display): connected" }
            var text = "\(display): disconnected"
            if let reason = c.reason { text += " (\(reason.rawValue.replacingOccurrences(of: "_", with: " ")))" }
            if let detail = c.detail { text += ": \(detail)" }
            if let retry = c.nextRetryMs {
                text += ". Retrying in \(max(0, (retry - Clock.milliseconds() + 999) / 1000)) s."
            }
            return text
        }
    }

    /// Prints a contact coming online or going offline; other contact changes are quiet.
    /// The event does not say which it was, so this asks the node, which counts as activity
    /// for auto-lock (once per connect or disconnect; while locked it cannot tell, and
    /// prints nothing).
    private func contactChanged(_ id: Int64) {
        guard let contact = try? node.contact(id) else {
            online.withLock { _ = $0.removeValue(forKey: id) }  // deleted (or locked: unknown)
            return
        }
        var now: String?
        if case .online(let transport) = contact.connection { now = transport }
        let before = online.withLock { o -> String? in
            defer { o[id] = now }
            return o[id]
        }
        guard before != now else { return }
        if let now {
            out.line(.object([("event", .string("contact_online")), ("contact_id", .int(id)),
                              ("contact", .string(contact.name)), ("transport", .string(now))])) {
                "\(contact.name) is online (\(now))"
            }
        } else {
            out.line(.object([("event", .string("contact_offline")), ("contact_id", .int(id)),
                              ("contact", .string(contact.name))])) { "\(contact.name) is offline" }
        }
    }
}

private extension JSON {
    /// The fields of an object (none for anything else), to extend it with more.
    var fields: [(String, JSON)] { if case .object(let f) = self { return f } else { return [] } }
}
