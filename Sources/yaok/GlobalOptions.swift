import ArgumentParser
import Foundation
import YaOK

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The data directory (default: $YAOK_HOME, else ~/.yaok).")
    var home: String?

    @Flag(name: .long, help: "Print JSON (one object or array) instead of text.")
    var json = false

    /// Moves `--home DIR`, `--home=DIR` and `--json` from before the first subcommand word
    /// to the end of the arguments (before a `--` terminator, if any).
    static func movingLeadingGlobals(_ arguments: [String]) -> [String] {
        var globals: [String] = []
        var rest = arguments[...]
        while let first = rest.first {
            if first == "--home", rest.count >= 2 {
                globals += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else if first.hasPrefix("--home=") || first == "--json" {
                globals.append(first)
                rest = rest.dropFirst()
            } else {
                break
            }
        }
        var out = Array(rest)
        let end = out.firstIndex(of: "--") ?? out.count
        out.insert(contentsOf: globals, at: end)
        return out
    }

    var dataDirectory: String {
        if let home { return home }
        if let env = ProcessInfo.processInfo.environment["YAOK_HOME"], !env.isEmpty { return env }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".yaok").path
    }

    /// Opens the node, creating the directory (owner-only) if needed.
    func openNode() throws -> Node {
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        do {
            return try Node(dataDirectory: dataDirectory)
        } catch let error as YaOKError where error.code == .busy
            && ControlClient.isServing(ControlSocket.path(home: dataDirectory)) {
            throw YaOKError(.busy, "\(error.message): `yaok run` is serving it; only send, history, retry, outbox "
                            + "and status go through it, the other commands need it stopped")
        }
    }

    /// Opens the node and unlocks it with the PIN.
    func unlockedNode() throws -> Node {
        let node = try openNode()
        try unlock(node)
        return node
    }

    /// Unlocks `node` with the PIN ($YAOK_PIN, else a prompt); a clear error if there is no
    /// identity yet.
    func unlock(_ node: Node) throws {
        guard try node.status().initialized else {
            throw YaOKError(.notInitialized, "No identity in \(dataDirectory): run `yaok init --name NAME` first")
        }
        try node.unlock(pin: try PINInput.pin(prompt: "PIN: "))
    }

    /// What opening a data directory that another node holds throws.
    static let busyCode = YaOKError.Code.busy
}
