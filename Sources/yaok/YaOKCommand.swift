import ArgumentParser

/// `yaok`: the Ya OK core demo CLI. Every command exits non-zero with the library's message
/// on failure.
@main
struct YaOKCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "yaok",
        abstract: "Ya OK core: delay-tolerant, end-to-end encrypted messaging.",
        subcommands: [Demo.self]
    )
}
