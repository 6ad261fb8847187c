import Foundation
import YaOK

/// Where a PIN comes from: $YAOK_PIN for scripts, else the terminal with echo off.
enum PINInput {
    static func pin(prompt: String) throws -> String {
        if let pin = ProcessInfo.processInfo.environment["YAOK_PIN"] { return pin }
        return try readFromTerminal(prompt: prompt)
    }

    /// For setup: the PIN twice. YAOK_PIN serves as both; YAOK_PIN_CONFIRM, if set, is the
    /// confirmation (so scripts can exercise "PINs do not match").
    static func readNew() throws -> (pin: String, confirmation: String) {
        let env = ProcessInfo.processInfo.environment
        if let pin = env["YAOK_PIN"] { return (pin, env["YAOK_PIN_CONFIRM"] ?? pin) }
        // A PIN setup would refuse (too short, control characters) is said at once and asked
        // again, not only after it was typed twice and the command ended.
        for attempt in 1...3 {
            let pin = try readFromTerminal(prompt: "Choose a PIN (at least 6 digits): ")
            do {
                _ = try SecretStrength.check(pin)
            } catch let error as YaOKError where attempt < 3 {
                try tell("\(error.message)\n")
                continue
            }
            let confirmation = try readFromTerminal(prompt: "Repeat the PIN: ")
            return (pin, confirmation)
        }
        throw YaOKError(.pinTooShort)  // not reached: the third refusal is thrown above
    }

    /// A line to the person at the terminal (the prompts' channel, not stdout).
    private static func tell(_ message: String) throws {
        let fd = open("/dev/tty", O_WRONLY | O_NOCTTY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = message.withCString { write(fd, $0, strlen($0)) }
    }

    private static func readFromTerminal(prompt: String) throws -> String {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY)
        guard fd >= 0 else {
            throw YaOKError(.invalidArgument, "No terminal to read the PIN from: set YAOK_PIN")
        }
        defer { close(fd) }
        var saved = termios()
        let haveTermios = tcgetattr(fd, &saved) == 0
        if haveTermios {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer { if haveTermios { tcsetattr(fd, TCSAFLUSH, &saved) } }
        _ = prompt.withCString { write(fd, $0, strlen($0)) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") {
            line.append(byte)
            if line.count > 256 { break }
        }
        _ = write(fd, "\n", 1)
        return String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
