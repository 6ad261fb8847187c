import ArgumentParser
import YaOK

/// Forgotten PIN: destroy the identity and every message, contact and log entry.
struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Destroy your identity and all data (for a forgotten PIN).",
        discussion: "This cannot be undone. Nothing happens without --confirm.")

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Yes, destroy the identity and all data.")
    var confirm = false

    func run() throws {
        try Output.run(json: options.json) {
            try options.openNode().reset(confirm: confirm)
            Output.emit(.object([("reset", .bool(true))]), asJSON: options.json) {
                "Identity and all data destroyed."
            }
        }
    }
}
