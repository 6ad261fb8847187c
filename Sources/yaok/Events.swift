import ArgumentParser
import YaOK

/// The security log: wrong PINs, lockouts, unknown senders, tampering… never content.
struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the security event log: the newest events (--limit), oldest first.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "How many events to show.")
    var limit = 50

    func run() throws {
        try Output.run(json: options.json) {
            let events = try options.unlockedNode().securityEvents(limit: limit)
            Output.emit(.array(events.map(\.json)), asJSON: options.json) {
                events.isEmpty ? "No security events" :
                    events.map { "\(Output.time($0.time))  \($0.kind.rawValue)\($0.detail.isEmpty ? "" : "  \($0.detail)")" }
                    .joined(separator: "\n")
            }
        }
    }
}
