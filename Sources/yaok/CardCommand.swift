import ArgumentParser
import QRCode
import YaOK

/// Your contact card: the text a QR code carries, for others to add you, drawn as a QR
/// code in the terminal for a phone to scan.
struct CardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "card", abstract: "Print your contact card and its QR code; --png writes the QR code as an image.",
        discussion: "Through the running `yaok run` for this home when there is one: no PIN then. Without one it asks for "
            + "the PIN: the card's name and keys are sealed while the node is locked.")

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Print only the card text, no QR code.")
    var noQR = false

    @Flag(help: "Draw the QR code for a light terminal background (the default suits a dark one).")
    var lightBackground = false

    @Option(name: .customLong("png"), help: ArgumentHelp("Also write the QR code as a PNG image to this file.", valueName: "file"))
    var pngPath: String?

    @Option(help: "Pixels per QR module in the PNG.")
    var pngScale = 8

    func validate() throws {
        guard (1...64).contains(pngScale) else { throw ValidationError("--png-scale must be 1 to 64") }
    }

    func run() throws {
        try Output.run(json: options.json) {
            // The card is sealed with the identity while the node is locked (its name and keys
            // are not readable without the PIN), so it comes from the `yaok run` serving this
            // home, which holds the node unlocked, and only without one is the PIN asked.
            let served = try PeerClient.answer(.card, options)
            let card = try ContactCard(text: served["card"]?.string ?? "")
            // Medium error correction (15 %) where it fits: a card is 270 to 340 bytes, a
            // version 12 to 14 symbol. In the terminal the symbol and its quiet zone must fit
            // 80 columns, which a long name's card at M does not (73 + 8 modules): it is then
            // drawn at L. The PNG has no width limit and is always M.
            let qr = try? QRCode.encode(card.text, ecc: .medium)
            let terminalQR = qr.flatMap { $0.size + 8 <= 80 ? $0 : nil } ?? (try? QRCode.encode(card.text, ecc: .low))
            if let pngPath {
                guard let qr else { throw CLIError("The card does not fit in a QR code") }
                do {
                    try qr.writePNG(to: pngPath, quietZone: 4, scale: pngScale)
                } catch {
                    throw CLIError("\(error)")
                }
            }
            var fields: [(String, JSON)] = [
                ("card", .string(card.text)),
                ("name", .string(card.name)),
                ("fingerprint", .string(card.fingerprint.hex)),
            ]
            if let pngPath { fields.append(("png", .string(pngPath))) }
            Output.emit(.object(fields), asJSON: options.json) {
                var lines: [String] = []
                if !noQR, let qr = terminalQR {
                    lines.append(qr.terminalString(quietZone: 4, invert: !lightBackground))
                }
                lines += [card.text, "", "\(card.name)  fingerprint \(card.fingerprint)"]
                if let pngPath { lines.append("QR code written to \(pngPath)") }
                return lines.joined(separator: "\n")
            }
        }
    }
}
