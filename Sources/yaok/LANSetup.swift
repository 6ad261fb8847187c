import YaOK

/// Builds the LAN transport from `run`'s options.
enum LANSetup {
    static func transport(port: Int?, peers: [String], listen: String?) throws -> Transport {
        // The LAN transport (target YaOKTransports) is not in main yet.
        throw CLIError("The LAN transport is not in this build yet", status: .invalidArgument)
    }
}
