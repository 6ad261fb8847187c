import YaOK

/// The line editor of `yaok chat`, without the terminal: bytes typed go in, the line and
/// what to do come out. Text is appended at the end (no cursor movement): UTF-8 is
/// assembled from its bytes, Backspace removes the last character (a whole grapheme, e.g.
/// an emoji with its modifiers), and the line never grows past `MessageText.maxBytes`.
struct ChatEditor {
    /// What a key asks of the chat.
    enum Action: Equatable {
        case none
        case submit(String)
        case leave
        case retry
        case redraw
        case dismiss  // Esc: clears a notice or the help
    }

    static let limit = MessageText.maxBytes
    /// The byte count shows once fewer than this many bytes are left.
    static let countdownFrom = 1024

    private(set) var line = ""
    /// Set when a key was refused (the limit, Ctrl-D with text): a short reason.
    private(set) var refusal: String?

    private var utf8: [UInt8] = []
    private var expected = 0
    private var escape: [UInt8]?
    private var pasting = false

    var bytes: Int { line.utf8.count }
    var remaining: Int { ChatEditor.limit - bytes }
    /// "312 bytes left", once the limit nears; nil before.
    var countdown: String? {
        remaining < ChatEditor.countdownFrom ? "\(remaining) \(remaining == 1 ? "byte" : "bytes") left of 10 KB" : nil
    }

    mutating func clear() { line = "" }

    /// Feeds bytes read from the terminal; returns the actions they complete, in order.
    mutating func feed(_ input: some Sequence<UInt8>) -> [Action] {
        refusal = nil
        var actions: [Action] = []
        for byte in input {
            let action = key(byte)
            if action != .none { actions.append(action) }
        }
        return actions
    }

    private mutating func key(_ b: UInt8) -> Action {
        if var sequence = escape {
            sequence.append(b)
            escape = sequence
            // ESC [ params final (0x40…0x7E), ESC O x, or ESC x: skipped, except bracketed paste.
            if sequence.count == 1, b != UInt8(ascii: "["), b != UInt8(ascii: "O") {
                escape = nil
                return .none
            }
            if sequence.count >= 2, (0x40...0x7E).contains(b) || sequence.count > 16 {
                escape = nil
                let text = String(decoding: sequence, as: UTF8.self)
                if text == "[200~" { pasting = true }
                if text == "[201~" { pasting = false }
                return .none
            }
            return .none
        }
        if expected > 0 {
            guard b & 0xC0 == 0x80 else {
                utf8 = []
                expected = 0
                return key(b)  // a broken sequence: drop it, take this byte afresh
            }
            utf8.append(b)
            if utf8.count == expected {
                defer { utf8 = []; expected = 0 }
                if let text = String(validating: utf8, as: UTF8.self) { insert(text) }
            }
            return .none
        }
        switch b {
        case 0x1B:
            escape = []
            return .dismiss
        case 0x03:
            return .leave
        case 0x04:
            guard line.isEmpty else {
                refusal = "Ctrl-D leaves on an empty line (Ctrl-C leaves now)"
                return .none
            }
            return .leave
        case 0x0D, 0x0A:
            if pasting {
                insert("\n")
                return .none
            }
            return .submit(line)
        case 0x7F, 0x08:
            if !line.isEmpty { line.removeLast() }
            return .none
        case 0x15:  // Ctrl-U
            line = ""
            return .none
        case 0x17:  // Ctrl-W: the last word and the spaces after it
            while let last = line.last, last == " " { line.removeLast() }
            while let last = line.last, last != " " { line.removeLast() }
            return .none
        case 0x12:  // Ctrl-R
            return .retry
        case 0x0C:  // Ctrl-L
            return .redraw
        case 0x09:
            insert("\t")
            return .none
        case 0x00..<0x20:
            return .none
        case 0x80...:
            switch b {
            case 0xC2...0xDF: expected = 2
            case 0xE0...0xEF: expected = 3
            case 0xF0...0xF4: expected = 4
            default: return .none  // a stray continuation byte or an invalid lead byte
            }
            utf8 = [b]
            return .none
        default:
            insert(String(UnicodeScalar(b)))
            return .none
        }
    }

    private mutating func insert(_ text: String) {
        guard bytes + text.utf8.count <= ChatEditor.limit else {
            refusal = "A message is at most 10 KB (\(ChatEditor.limit) bytes): the line is full"
            return
        }
        line += text
    }
}
