import ArgumentParser
import YaOK

/// Your contact card: the text a QR code carries, for others to add you.
struct CardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "card", abstract: "Print your contact card.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        try Output.run(json: options.json) {
            let identity = try options.unlockedNode().identity()
            let card = identity.card
            Output.emit(.object([
                ("card", .string(card.text)),
                ("name", .string(card.name)),
                ("fingerprint", .string(card.fingerprint.hex)),
            ]), asJSON: options.json) {
                "\(card.text)\n\n\(card.name)  fingerprint \(card.fingerprint)"
            }
        }
    }
}
