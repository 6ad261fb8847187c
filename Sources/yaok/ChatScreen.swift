import Glibc
import YaOK

/// What `yaok chat` shows of a conversation: read from the `conversation` request's answer
/// (PeerRequest), the same through `yaok run` or from a node opened here.
struct ChatSnapshot: Equatable {
    struct Line: Equatable {
        var messageID: String
        var outgoing: Bool
        var text: String
        var status: String
        var time: Int64
    }

    var contactID: Int64
    var contact: String
    var connection: String
    var messages: [Line]
    /// Transport trouble worth a line: a relay that is down and when it retries, a
    /// transport that failed, no transport at all.
    var transportIssues: [String]

    init(_ json: JSON) {
        contactID = json["contact_id"]?.int ?? 0
        contact = json["contact"]?.string ?? "?"
        connection = json["deleted"]?.bool == true ? "deleted: read only" : Diagnostics.connection(json["connection"])
        messages = (json["messages"]?.array ?? []).map { m in
            Line(messageID: m["message_id"]?.string ?? "", outgoing: m["direction"]?.string == "outgoing",
                 text: m["text"]?.string ?? "", status: m["status"]?.string ?? "",
                 time: m["sender_timestamp_ms"]?.int ?? 0)
        }
        var issues: [String] = []
        for t in json["transports"]?.array ?? [] {
            let name = t["display_name"]?.string ?? t["name"]?.string ?? "?"
            if let status = t["details"]?["status"]?.string, status != "Connected" {
                issues.append("\(name): \(status)")  // "Relay: Disconnected: … Retrying in 8 s."
            } else if t["state"]?.string == "failed" {
                issues.append("\(name): failed\(t["error"]?.string.map { ": \($0)" } ?? "")")
            }
        }
        for case .string(let w) in json["warnings"]?.array ?? [] {
            issues.append(w == YaOKError(.noRoute).message ? "\(w): messages wait (start `yaok run --lan` or pass --lan/--relay)" : w)
        }
        transportIssues = issues
    }

    var failed: [Line] { messages.filter { $0.outgoing && $0.status == "failed" } }
}

/// Lays out the chat screen (pure: lines of text and where the cursor goes; `ChatTerminal`
/// draws them). Top to bottom: a header, the conversation (the newest at the bottom, long
/// messages wrapped), transport trouble if any, a notice line with the byte countdown, and
/// the input line.
struct ChatScreen {
    struct Frame: Equatable {
        var lines: [String]
        /// Which lines are drawn in reverse video (the header).
        var highlighted: Set<Int>
        var cursorColumn: Int
    }

    static let marks: [String: String] = ["pending": "…", "sent": "✓", "delivered": "✓✓", "failed": "! failed: /retry"]

    static let help = [
        "Enter sends. Ctrl-C leaves (Ctrl-D too, on an empty line).",
        "/retry or Ctrl-R   try the failed (!) messages again now",
        "/help              this help (Esc hides it);  /quit leaves",
        "//text             send a line that starts with /",
        "Marks: … pending   ✓ sent   ✓✓ delivered   ! failed",
        "A message is at most 10 KB; the bytes left show as the limit nears.",
    ]

    static func frame(_ snapshot: ChatSnapshot?, input: String, notice: String?, countdown: String?, overlay: [String],
                      rows: Int, columns: Int) -> Frame {
        let width = max(columns, 10)
        var header = " \(snapshot?.contact ?? "…")  ·  \(snapshot?.connection ?? "connecting")"
        header += "   /help  Ctrl-C leaves"
        var bottom: [String] = []
        for issue in snapshot?.transportIssues ?? [] { bottom += wrap("⚠ " + issue, width).prefix(3) }
        let hint = notice ?? ""
        if let countdown {
            let room = max(0, width - displayWidth(countdown) - 2)
            let left = fit(hint, room)
            bottom.append(left + String(repeating: " ", count: max(1, width - displayWidth(left) - displayWidth(countdown)))
                          + countdown)
        } else {
            bottom.append(fit(hint, width))
        }
        let prompt = "> "
        let shown = tail(visible(input), width - displayWidth(prompt) - 1)
        bottom.append(prompt + shown)

        let height = max(0, rows - 1 - bottom.count)
        var body: [String] = []
        if let snapshot {
            if snapshot.messages.isEmpty { body.append("No messages with \(snapshot.contact) yet: type one and press Enter.") }
            for m in snapshot.messages {
                let who = m.outgoing ? "You" : snapshot.contact
                let mark = m.outgoing ? "  " + (marks[m.status] ?? m.status) : ""
                body += wrap("\(clock(m.time)) \(who): \(m.text)\(mark)", width)
            }
        }
        for line in overlay { body += wrap(line, width) }
        body = Array(body.suffix(height))
        body = Array(repeating: "", count: height - body.count) + body
        let lines = Array(([fit(header, width)] + body + bottom).prefix(max(rows, 1)))
        return Frame(lines: lines, highlighted: [0], cursorColumn: displayWidth(prompt) + displayWidth(shown) + 1)
    }

    // MARK: - Text

    /// Received text may hold terminal escapes and bidi controls: everything
    /// `Output.hidden` names is shown as "�" (a tab as a space, a line break as "↵"), so
    /// nothing a contact sends can drive the terminal or reorder the line.
    static func visible(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { s -> Unicode.Scalar in
            switch s.value {
            case 0x09: return " "
            case 0x0A: return "↵"
            default: return Output.hidden(s) ? "\u{FFFD}" : s
            }
        }))
    }

    /// Lines of at most `width` columns: split at line breaks, then wherever the width ends.
    static func wrap(_ text: String, _ width: Int) -> [String] {
        var out: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = "", used = 0
            for c in visible(String(paragraph)) {
                let w = displayWidth(c)
                if used + w > width, !line.isEmpty {
                    out.append(line)
                    line = ""
                    used = 0
                }
                line.append(c)
                used += w
            }
            out.append(line)
        }
        return out
    }

    /// The start of `text` that fits in `width` columns.
    static func fit(_ text: String, _ width: Int) -> String {
        var out = "", used = 0
        for c in visible(text) {
            let w = displayWidth(c)
            if used + w > width { break }
            out.append(c)
            used += w
        }
        return out
    }

    /// The end of `text` that fits in `width` columns.
    static func tail(_ text: String, _ width: Int) -> String {
        var out: [Character] = [], used = 0
        for c in text.reversed() {
            let w = displayWidth(c)
            if used + w > width { break }
            out.append(c)
            used += w
        }
        return String(out.reversed())
    }

    static func displayWidth(_ text: String) -> Int { text.reduce(0) { $0 + displayWidth($1) } }

    /// Columns a character takes: 0 for combining marks and joiners, 2 for East Asian wide
    /// and emoji, else 1. An approximation of wcwidth that needs no locale.
    static func displayWidth(_ c: Character) -> Int {
        guard let first = c.unicodeScalars.first else { return 0 }
        let v = first.value
        if first.properties.generalCategory == .nonspacingMark || first.properties.generalCategory == .enclosingMark
            || v == 0x200B || v == 0x200D || (0xFE00...0xFE0F).contains(v) {
            return 0
        }
        if c.unicodeScalars.count > 1, first.properties.isEmojiPresentation || c.unicodeScalars.contains(where: { $0.value == 0xFE0F }) {
            return 2
        }
        switch v {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
             0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD:
            return 2
        default:
            return first.properties.isEmojiPresentation ? 2 : 1
        }
    }

    /// "14:05" in local time.
    static func clock(_ ms: Int64) -> String {
        var t = time_t(ms / 1000)
        var parts = tm()
        localtime_r(&t, &parts)
        let h = Int(parts.tm_hour), m = Int(parts.tm_min)
        return (h < 10 ? "0" : "") + "\(h):" + (m < 10 ? "0" : "") + "\(m)"
    }
}
