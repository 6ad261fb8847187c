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
                if let vault = status.vault {
                    let memory = vault.pinHashing.memLimit % (1 << 20) == 0 ? "\(vault.pinHashing.memLimit >> 20) MiB" : "\(vault.pinHashing.memLimit >> 10) KiB"
                    let costs = "PIN hashing: Argon2id, \(vault.pinHashing.opsLimit) passes, \(memory)"
                    lines.append(costs + (vault.meetsProductionMinimum ? "" : " (below the production minimum: test only)"))
                    if vault.deviceBound { lines.append("Bound to a device secret") }
                }
                return lines.joined(separator: "\n")
            }
        }
    }
}
