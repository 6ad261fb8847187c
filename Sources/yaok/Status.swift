import ArgumentParser
import YaOK

/// Lock state without the PIN: initialised, locked, lockout seconds left.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show whether an identity exists and the lock state.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        try Output.run(json: options.json) {
            let status = try options.openNode().status()
            Output.emit(status.json, asJSON: options.json) {
                guard status.initialized else { return "No identity yet: run `yaok init --name NAME`" }
                var lines = ["Identity set up; \(status.locked ? "locked" : "unlocked")"]
                if status.lockoutSecondsRemaining > 0 {
                    lines.append("Too many attempts. Try again in \(status.lockoutSecondsRemaining) seconds.")
                } else if status.failedAttempts > 0 {
                    lines.append("\(status.failedAttempts) wrong PIN attempt(s)")
                }
                return lines.joined(separator: "\n")
            }
        }
    }
}
