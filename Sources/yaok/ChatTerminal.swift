import Glibc
import YaOK

/// The terminal for `yaok chat`: raw mode on the controlling terminal (no echo, no line
/// buffering, no signals from keys: Ctrl-C arrives as a byte), the alternate screen, and
/// bracketed paste. `restore` puts everything back; call it on every way out (the chat does
/// so in a `defer`, and SIGTERM/SIGHUP/SIGINT end the chat's loop rather than the process).
final class ChatTerminal {
    let input: Int32
    let output: Int32
    private var saved = termios()
    private(set) var isRaw = false
    private var lastFrame: ChatScreen.Frame?

    /// Refuses when stdin or stdout is not a terminal.
    init(input: Int32 = STDIN_FILENO, output: Int32 = STDOUT_FILENO) throws {
        guard isatty(input) == 1, isatty(output) == 1 else {
            throw CLIError("`yaok chat` needs a terminal; scripts use `yaok send` and `yaok history`", status: .invalidArgument)
        }
        self.input = input
        self.output = output
        guard tcgetattr(input, &saved) == 0 else { throw UnixSocket.lastError("tcgetattr") }
    }

    deinit { restore() }

    func enterRaw() throws {
        guard !isRaw else { return }
        var raw = saved
        raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_cflag |= tcflag_t(CS8)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(input, TCSAFLUSH, &raw) == 0 else { throw UnixSocket.lastError("tcsetattr") }
        isRaw = true
        lastFrame = nil
        write("\u{1B}[?1049h\u{1B}[?2004h\u{1B}[2J")  // alternate screen, bracketed paste, clear
    }

    /// Back to the terminal as it was. Idempotent.
    func restore() {
        guard isRaw else { return }
        isRaw = false
        write("\u{1B}[0m\u{1B}[?2004l\u{1B}[?25h\u{1B}[?1049l")
        var original = saved
        tcsetattr(input, TCSAFLUSH, &original)
    }

    /// Runs `body` with the terminal as it was (for a PIN prompt), then raw again.
    func cooked<T>(_ body: () throws -> T) throws -> T {
        let wasRaw = isRaw
        restore()
        defer { if wasRaw { try? enterRaw() } }
        return try body()
    }

    /// Rows and columns (24×80 if the terminal does not say).
    var size: (rows: Int, columns: Int) {
        var ws = winsize()
        guard ioctl(output, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_row > 0, ws.ws_col > 0 else { return (24, 80) }
        return (Int(ws.ws_row), Int(ws.ws_col))
    }

    /// Draws `frame`, rewriting only the lines that changed since the last one.
    func draw(_ frame: ChatScreen.Frame, force: Bool = false) {
        if force { lastFrame = nil }
        var out = "\u{1B}[?25l"
        if lastFrame == nil || lastFrame?.lines.count != frame.lines.count { out += "\u{1B}[2J" }
        for (i, line) in frame.lines.enumerated() {
            let changed = lastFrame.map { i >= $0.lines.count || $0.lines[i] != line || $0.highlighted != frame.highlighted } ?? true
            guard changed else { continue }
            out += "\u{1B}[\(i + 1);1H\u{1B}[2K"
            out += frame.highlighted.contains(i) ? "\u{1B}[7m\(line)\u{1B}[K\u{1B}[0m" : line
        }
        out += "\u{1B}[\(frame.lines.count);\(frame.cursorColumn)H\u{1B}[?25h"
        lastFrame = frame
        write(out)
    }

    func bell() { write("\u{07}") }

    /// Reads what is waiting on the input (after poll said so); nil at end of input.
    func read() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
            if n > 0 { return Array(buffer[..<n]) }
            if n < 0, errno == EINTR || errno == EAGAIN { return [] }
            return nil
        }
    }

    private func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.write(output, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { return }  // the terminal is gone (hung up): nothing to draw on
            bytes = bytes.dropFirst(n)
        }
    }
}
