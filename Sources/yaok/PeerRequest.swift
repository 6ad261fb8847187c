import YaOK

/// The commands that answer the same whether they open the node themselves or ask the
/// `yaok run` that holds it (over the control socket): send, history, retry, outbox,
/// status, and `conversation` for `yaok chat`. Each is a value that travels as the request's JSON, runs against a node, and
/// renders its result, so both paths print exactly the same thing.
enum PeerRequest: Equatable {
    case send(contact: String, text: String)
    case history(contact: String, limit: Int)
    case retry(messageID: String)
    case outbox
    case status
    case transport(name: String, enabled: Bool)
    /// What `yaok chat` shows and polls: the newest messages of one conversation, the
    /// contact's connection, and the transports' state (a relay that is down and when it
    /// retries).
    case conversation(contact: String, limit: Int)
    /// One's own contact card (its text): through a running `yaok run`, which holds the node
    /// unlocked, `yaok card` needs no PIN.
    case card

    static let historyLimits = 1...1000

    // MARK: - As a control socket request

    /// `{"cmd": …, …arguments}`, plus `"pin"` when the client had to unlock.
    func json(pin: String? = nil) -> JSON {
        var fields: [(String, JSON)]
        switch self {
        case .send(let contact, let text): fields = [("cmd", .string("send")), ("contact", .string(contact)), ("text", .string(text))]
        case .history(let contact, let limit): fields = [("cmd", .string("history")), ("contact", .string(contact)), ("limit", .int(Int64(limit)))]
        case .retry(let id): fields = [("cmd", .string("retry")), ("message_id", .string(id))]
        case .conversation(let contact, let limit):
            fields = [("cmd", .string("conversation")), ("contact", .string(contact)), ("limit", .int(Int64(limit)))]
        case .outbox: fields = [("cmd", .string("outbox"))]
        case .status: fields = [("cmd", .string("status"))]
        case .card: fields = [("cmd", .string("card"))]
        case .transport(let name, let enabled):
            fields = [("cmd", .string("transport")), ("name", .string(name)), ("enabled", .bool(enabled))]
        }
        if let pin { fields.append(("pin", .string(pin))) }
        return .object(fields)
    }

    init(json: JSON) throws {
        func string(_ key: String) throws -> String {
            guard let s = json[key]?.string else { throw CLIError("Request needs \"\(key)\" (a string)", status: .invalidArgument) }
            return s
        }
        switch json["cmd"]?.string {
        case "send": self = .send(contact: try string("contact"), text: try string("text"))
        case "history", "conversation":
            guard let limit = json["limit"]?.int, PeerRequest.historyLimits.contains(Int(limit)) else {
                throw CLIError("Request needs \"limit\" (1 to 1000)", status: .invalidArgument)
            }
            self = json["cmd"]?.string == "history" ? .history(contact: try string("contact"), limit: Int(limit))
                : .conversation(contact: try string("contact"), limit: Int(limit))
        case "retry": self = .retry(messageID: try string("message_id"))
        case "outbox": self = .outbox
        case "status": self = .status
        case "card": self = .card
        case "transport":
            guard let enabled = json["enabled"]?.bool else {
                throw CLIError("Request needs \"enabled\" (true or false)", status: .invalidArgument)
            }
            self = .transport(name: try string("name"), enabled: enabled)
        case let other?: throw CLIError("Unknown command \"\(other)\"", status: .invalidArgument)
        case nil: throw CLIError("Request needs \"cmd\"", status: .invalidArgument)
        }
    }

    /// Whether the keys are needed (all but `status` and `transport`, which work while locked).
    var needsKeys: Bool {
        switch self {
        case .status, .transport: return false
        default: return true
        }
    }

    // MARK: - Against a node

    /// Runs the request on `node` (unlocked, unless `needsKeys` is false) and returns what
    /// `--json` prints.
    func perform(on node: Node) throws -> JSON {
        switch self {
        case .send(let query, let text):
            let contact = try node.findContact(query)
            let message = try node.send(to: contact.id, text: text)
            return try PeerRequest.sent(message, to: contact.name, node)

        case .history(let query, let limit):
            let (id, name) = try PeerRequest.resolveConversation(query, node)
            let page = try node.history(id, limit: limit)
            return .object([("contact_id", .int(id)), ("contact", .string(name)),
                            ("messages", .array(page.messages.map(\.json)))])

        case .conversation(let query, let limit):
            // `yaok chat` polls this several times a second: a terminal left open must still
            // auto-lock, so these reads are not activity (typing and sending are).
            let (id, name, page, contact, diagnostics) = try node.withoutActivity {
                let (id, name) = try PeerRequest.resolveConversation(query, node)
                return (id, name, try node.history(id, limit: limit), try? node.contact(id), try node.diagnostics())
            }
            return .object([("contact_id", .int(id)), ("contact", .string(name)), ("deleted", .bool(contact == nil)),
                            ("connection", contact?.connection.json ?? .null),
                            ("messages", .array(page.messages.map(\.json))),
                            ("transports", diagnostics["transports"] ?? .array([])),
                            ("warnings", diagnostics["warnings"] ?? .array([]))])

        case .retry(let hex):
            guard let id = PeerRequest.messageID(hex: hex) else {
                throw CLIError("A message ID is 32 hex characters", status: .invalidArgument)
            }
            let message = try node.retry(id)
            let name = (try? node.contact(message.conversationID).name) ?? "contact \(message.conversationID)"
            return try PeerRequest.sent(message, to: name, node)

        case .outbox:
            let names = Dictionary(try node.contacts().map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
            return .array(try node.outbox().map { entry in
                entry.json.appending([("contact", .string(names[entry.contactID] ?? "contact \(entry.contactID)")),
                                      ("waiting_for_transport", .bool(entry.waitingForTransport))])
            })

        case .card:
            return .object([("card", .string(try node.profile().text))])

        case .status:
            let status = try node.status()
            // Works while locked too, without the parts that name contacts.
            let diagnostics = try node.diagnostics()
            return status.json.appending([("diagnostics", diagnostics)])

        case .transport(let name, let enabled):
            guard node.transports().contains(where: { $0.name == name }) else {
                throw CLIError("No transport named \(name) here: transports run inside `yaok run` (start it with --\(name))",
                               status: .notFound)
            }
            try node.setTransport(name, enabled: enabled)
            guard let state = node.transports().first(where: { $0.name == name }) else { throw CLIError("No transport named \(name)") }
            return .object([("name", .string(state.name)), ("display_name", .string(state.displayName)),
                            ("state", .string(state.phase.rawValue)), ("error", state.error.map { .string($0) } ?? .null)])
        }
    }

    /// A message just queued (send, retry): the message, its recipient's name, and whether
    /// it waits for a transport to come up.
    private static func sent(_ message: Message, to name: String, _ node: Node) throws -> JSON {
        let entry = try node.outbox().first { $0.messageID == message.messageID }
        return message.json.appending([
            ("contact", .string(name)),
            ("waiting_for_transport", .bool(entry?.waitingForTransport ?? false)),
        ])
    }

    /// 32 hex digits (either case) as a message ID; nil for anything else.
    static func messageID(hex: String) -> MessageID? {
        let digits = Array(hex.utf8)
        guard digits.count == 2 * MessageID.length, digits.allSatisfy({ Character(Unicode.Scalar($0)).isHexDigit }) else { return nil }
        let bytes = stride(from: 0, to: digits.count, by: 2).compactMap { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16) }
        return try? MessageID(bytes: bytes)
    }

    /// The conversation a history request names: a contact (as `findContact` resolves it),
    /// or the number of a deleted contact whose messages were kept.
    private static func resolveConversation(_ query: String, _ node: Node) throws -> (Int64, String) {
        do {
            let contact = try node.findContact(query)
            return (contact.id, contact.name)
        } catch let error as YaOKError where error.code == .notFound {
            guard let id = Int64(query) else { throw error }
            _ = try node.history(id, limit: 1)  // notFound unless the conversation exists
            return (id, "deleted contact \(id)")
        }
    }

    // MARK: - As text

    /// What the command prints without --json, from the JSON it prints with it.
    func render(_ result: JSON) -> String {
        switch self {
        case .send, .retry:
            return PeerRequest.renderQueued(result)
        case .history, .conversation:
            let name = result["contact"]?.string ?? "?"
            let messages = result["messages"]?.array ?? []
            guard !messages.isEmpty else { return "No messages with \(name)" }
            return messages.map { m in
                let outgoing = m["direction"]?.string == "outgoing"
                let time = Output.time(m["sender_timestamp_ms"]?.int ?? 0)
                let who = outgoing ? "You" : name
                let status = outgoing ? "  [\(PeerRequest.statusLabel(m["status"]?.string))]" : ""
                return "\(time)  \(who): \(m["text"]?.string ?? "")\(status)"
            }.joined(separator: "\n")
        case .outbox:
            let entries = result.array ?? []
            guard !entries.isEmpty else { return "Outbox empty: every message has been sent" }
            return entries.map { e in
                let attempts = e["attempts"]?.int ?? 0
                let next: String
                if e["status"]?.string == "failed" {
                    next = "failed; `yaok retry` to try again"
                } else if e["waiting_for_transport"]?.bool == true {
                    next = "will send when connected"
                } else if let at = e["next_attempt_ms"]?.int {
                    next = "next try \(Output.time(at))"
                } else {
                    next = "sending"
                }
                return "\(e["message_id"]?.string ?? "?")  to \(e["contact"]?.string ?? "?")  "
                    + "\(attempts) \(attempts == 1 ? "attempt" : "attempts")  \(next)"
            }.joined(separator: "\n")
        case .card:
            return result["card"]?.string ?? ""
        case .status:
            return PeerRequest.renderStatus(result)
        case .transport:
            let name = result["display_name"]?.string ?? result["name"]?.string ?? "?"
            let error = result["error"]?.string.map { ": \($0)" } ?? ""
            return "\(name): \(result["state"]?.string ?? "?")\(error)"
        }
    }

    static func statusLabel(_ name: String?) -> String {
        switch name {
        case "pending": return "Pending"
        case "sent": return "Sent"
        case "delivered": return "Delivered"
        case "failed": return "Failed"
        default: return name ?? "?"
        }
    }

    private static func renderQueued(_ m: JSON) -> String {
        let id = m["message_id"]?.string ?? "?"
        let contact = m["contact"]?.string ?? "?"
        let state: String
        switch m["status"]?.string {
        case "pending": state = m["waiting_for_transport"]?.bool == true ? "Will send when connected" : "Sending…"
        case let other: state = statusLabel(other)
        }
        return "\(id)  to \(contact): \(state)"
    }

    private static func renderStatus(_ s: JSON) -> String {
        guard s["initialized"]?.bool == true else { return "No identity yet: run `yaok init --name NAME`" }
        var lines = [s["locked"]?.bool == true
            ? "Identity set up; locked (commands that need the keys ask for the PIN; scripts set YAOK_PIN)"
            : "Identity set up; unlocked"]
        let lockout = s["lockout_seconds"]?.int ?? 0, failed = s["failed_attempts"]?.int ?? 0
        if lockout > 0 {
            lines.append("Too many attempts. Try again in \(lockout) seconds.")
        } else if failed > 0 {
            lines.append("\(failed) wrong PIN attempt(s)")
        }
        if let vault = s["vault"], !vault.isNull {
            let mem = vault["mem_limit"]?.int ?? 0, ops = vault["ops_limit"]?.int ?? 0
            let memory = mem % (1 << 20) == 0 ? "\(mem >> 20) MiB" : "\(mem >> 10) KiB"
            lines.append("PIN hashing: Argon2id, \(ops) passes, \(memory)"
                         + (vault["meets_production_minimum"]?.bool == false ? " (below the production minimum: test only)" : ""))
            if vault["device_bound"]?.bool == true { lines.append("Bound to a device secret") }
        }
        guard let d = s["diagnostics"], !d.isNull else { return lines.joined(separator: "\n") }
        lines += Diagnostics.render(d)
        return lines.joined(separator: "\n")
    }
}
