import ArgumentParser
import Foundation
import YaOK

/// Prints results as text or JSON, and turns library errors into a message on stderr and a
/// non-zero exit status.
enum Output {
    static func emit(_ json: JSON, asJSON: Bool, text: () -> String) {
        print(asJSON ? json.serialized : text())
    }

    /// Runs a command body; a YaOKError is printed (as JSON with --json) and exits 1.
    static func run(json: Bool, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as YaOKError {
            if json {
                print(JSON.object([("error", .string(error.message)), ("status", .int(Int64(error.code.rawValue)))]).serialized)
            }
            FileHandle.standardError.write(Data("yaok: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
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
