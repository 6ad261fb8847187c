import ArgumentParser
import YaOK

/// First launch (US-001, US-002): create the identity and seal it under a PIN.
struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create your identity and set your PIN.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Your display name, 2 to 50 characters.")
    var name: String

    func run() throws {
        try Output.run(json: options.json) {
            let node = try options.openNode()
            _ = try DisplayName.validate(name)  // refuse a bad name before asking for a PIN
            let (pin, confirmation) = try PINInput.readNew()
            let result = try node.setup(name: name, pin: pin, confirmation: confirmation)
            let id = result.identity.publicIdentity
            var warnings: [String] = []
            if result.warnings.contains(.allZeroPIN) { warnings.append("A PIN of only zeros is easy to guess") }
            Output.emit(.object([
                ("name", .string(result.identity.name)),
                ("user_id", .string(id.userID)),
                ("fingerprint", .string(id.fingerprint.hex)),
                ("warnings", .array(warnings.map { .string($0) })),
                ("strength", result.strength.json),
            ]), asJSON: options.json) {
                (["Created \(result.identity.name)", "  user ID      \(id.userID)", "  fingerprint  \(id.fingerprint)",
                  "  PIN strength \(result.strength.level.rawValue) (about \(result.strength.estimatedBits) bits)"]
                    + warnings.map { "warning: \($0)" }).joined(separator: "\n")
            }
        }
    }
}
