import ArgumentParser
import QRCode
import YaOK

/// Your contact card: the text a QR code carries, for others to add you, drawn as a QR
/// code in the terminal for a phone to scan.
struct CardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "card", abstract: "Print your contact card.")

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Print only the card text, no QR code.")
    var noQR = false

    @Flag(help: "Draw the QR code for a light terminal background (the default suits a dark one).")
    var lightBackground = false

    func run() throws {
        try Output.run(json: options.json) {
            let card = try options.unlockedNode().profile()
            Output.emit(.object([
                ("card", .string(card.text)),
                ("name", .string(card.name)),
                ("fingerprint", .string(card.fingerprint.hex)),
            ]), asJSON: options.json) {
                var lines: [String] = []
                if !noQR, let qr = try? QRCode.encode(card.text) {
                    lines.append(qr.terminalString(quietZone: 4, invert: !lightBackground))
                }
                lines += [card.text, "", "\(card.name)  fingerprint \(card.fingerprint)"]
                return lines.joined(separator: "\n")
            }
        }
    }
}
