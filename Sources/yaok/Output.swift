import ArgumentParser
import Foundation
import YaOK

/// Prints results as text or JSON, and turns library errors into a message on stderr and a
/// non-zero exit status.
enum Output {
    static func emit(_ json: JSON, asJSON: Bool, text: () -> String) {
        print(asJSON ? json.serialized : printable(text()))
    }

    /// Text for a terminal: what a contact, a QR code or a relay wrote may hold escape
    /// sequences, so every control character but a line break or tab (and bidi overrides,
    /// which disguise text) is shown as "�". JSON output escapes them itself.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { s -> Unicode.Scalar in
            s.value == 0x09 || s.value == 0x0A || !hidden(s) ? s : "\u{FFFD}"
        }))
    }

    /// The scalars no terminal line shows as they are (the one list for `printable` and the
    /// chat screen): C0 and C1 controls and DEL, which make escape sequences; the line and
    /// paragraph separators; the bidi embeddings, overrides and isolates (U+202A–202E,
    /// U+2066–2069), which reorder what follows ("txt.exe" shown for "exe.txt").
    static func hidden(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0..<0x20, 0x7F..<0xA0, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// Runs a command body; a failure is printed to stderr (and as JSON on stdout with
    /// --json: {"error": message, "status": yaok_status or null}) and exits 1.
    static func run(json: Bool, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as YaOKError {
            fail(hint(error), status: Int64(error.code.rawValue), json: json)
        } catch let error as CLIError {
            fail(error.message, status: error.status.map { Int64($0.rawValue) }, json: json)
        } catch {
            // Not the library's: e.g. the data directory cannot be created.
            fail(error.localizedDescription, status: nil, json: json)
        }
    }

    /// The library's message, with what to do about it where the CLI knows better.
    static func hint(_ error: YaOKError) -> String {
        switch error.code {
        case .locked where error.message == YaOKError.Code.locked.defaultMessage:
            return "Locked: run the command again and enter your PIN when asked (scripts set YAOK_PIN); "
                + "a running `yaok run` asks for it with the next command"
        case .wrongPIN where error.message == YaOKError.Code.wrongPIN.defaultMessage:
            return "Incorrect PIN: try again (3 wrong PINs in a row make unlocking wait; `yaok status` shows how long)"
        default:
            return error.message
        }
    }

    private static func fail(_ message: String, status: Int64?, json: Bool) -> Never {
        if json {
            print(JSON.object([("error", .string(message)), ("status", status.map { .int($0) } ?? .null)]).serialized)
        }
        FileHandle.standardError.write(Data("yaok: \(printable(message))\n".utf8))
        exit(1)
    }

    static func time(_ ms: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(ms) / 1000)
        let f = DateFormatter()
        f.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return f.string(from: date)
    }

    static func connection(_ c: ConnectionStatus) -> String {
        switch c {
        case .online(let transport): return "Online (\(transport))"
        case .lastSeen(let ms): return "Last seen \(time(ms))"
        case .neverConnected: return "Never connected"
        }
    }
}
