import ArgumentParser

/// `yaok`: the Ya OK core demo CLI. Every command takes `--json` for scripts and exits
/// non-zero with the library's message on failure.
@main
struct YaOKCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "yaok",
        abstract: "Ya OK core: delay-tolerant, end-to-end encrypted messaging.",
        discussion: """
        Data lives in --home (default $YAOK_HOME, else ~/.yaok). Commands that need the keys \
        unlock with the PIN: from the YAOK_PIN environment variable (for scripts), else a \
        prompt that does not echo. Wrong PINs count toward the lockout across invocations.
        """,
        subcommands: [Init.self, Status.self, CardCommand.self, Contacts.self, Send.self, Chat.self, History.self, Retry.self, Outbox.self,
                      TransportCommand.self,
                      Run.self, Events.self, Reset.self, Demo.self]
    )

    /// `yaok --home DIR init …` reads naturally, but ArgumentParser only parses options in
    /// the command that declares them; so global options given before the subcommand are
    /// moved behind it.
    static func main() {
        main(GlobalOptions.movingLeadingGlobals(Array(CommandLine.arguments.dropFirst())))
    }
}
