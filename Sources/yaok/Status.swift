import ArgumentParser
import YaOK

/// Lock state without the PIN (initialised, locked, lockout seconds left), and the node's
/// diagnostics: transports, contacts online, messages waiting. Through the running
/// `yaok run` for this home when there is one, which is where transports run.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the lock state and diagnostics: transports, contacts online, messages waiting.")

    @OptionGroup var options: GlobalOptions

    func run() throws { try PeerClient.execute(.status, options) }
}
