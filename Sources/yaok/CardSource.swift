import Foundation
import QRCode
import YaOK

/// Where `contacts add` takes a card from: its text (yaok:2:…), a PNG or JPEG photo of the
/// QR code (read with libpng/libjpeg, decoded with ZBar), or a text file holding the card.
struct CardSource {
    /// The card text, not yet checked (the node checks it when previewing).
    let text: String
    /// Where it came from, for the preview: nil for text given on the command line.
    let origin: String?

    static func resolve(_ argument: String) throws -> CardSource {
        // Card text is never a file name worth trying; anything else is tried as a file.
        if argument.hasPrefix("yaok:") { return CardSource(text: argument, origin: nil) }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), !isDirectory.boolValue else {
            if isDirectory.boolValue { throw CLIError("\(argument) is a directory, not a card or a file holding one") }
            // What looks like a path is a file that is missing, not a bad card.
            if looksLikePath(argument) { throw CLIError("No such file: \(argument)", status: .notFound) }
            // Neither a card nor a file: the node says it is not a card.
            return CardSource(text: argument, origin: nil)
        }
        guard let handle = FileHandle(forReadingAtPath: argument) else {
            throw CLIError("Cannot open \(argument): \(String(cString: strerror(errno)))")
        }
        let head = [UInt8](handle.readData(ofLength: 8))
        try? handle.close()
        let isPNG = head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let isJPEG = head.starts(with: [0xFF, 0xD8, 0xFF])
        if isPNG || isJPEG { return try fromPhoto(argument) }

        // A text file with the card in it (as `yaok card --no-qr > bob.txt` leaves it): at
        // most 64 KiB is read, whatever the file's size.
        let text = FileHandle(forReadingAtPath: argument).map { reader -> Data in
            defer { try? reader.close() }
            return reader.readData(ofLength: 64 * 1024 + 1)
        }
        if let data = text, data.count <= 64 * 1024,
           let content = String(data: data, encoding: .utf8),
           let line = content.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) })
               .first(where: { $0.hasPrefix("yaok:") }) {
            return CardSource(text: line, origin: argument)
        }
        throw CLIError("\(argument) is neither a PNG or JPEG photo of a QR code nor a file holding a card (yaok:2:…)",
                       status: .invalidCard)
    }

    /// A file name rather than text: a path separator (not in a URL), or a photo's or text
    /// file's extension.
    static func looksLikePath(_ argument: String) -> Bool {
        if argument.contains("://") { return false }
        let lower = argument.lowercased()
        return argument.contains("/") || [".png", ".jpg", ".jpeg", ".txt"].contains { lower.hasSuffix($0) }
    }

    /// The Ya OK card among the QR codes in a photo.
    static func fromPhoto(_ path: String) throws -> CardSource {
        let payloads: [[UInt8]]
        do {
            payloads = try QRScanner.scan(imageAt: path)
        } catch let error as ImageError {
            throw CLIError("Invalid Ya OK QR code: \(error)", status: .invalidCard)
        }
        let texts = payloads.map { String(decoding: $0, as: UTF8.self) }
        if let card = texts.first(where: { $0.hasPrefix("yaok:") }) {
            return CardSource(text: card, origin: path)
        }
        guard let other = texts.first else {
            throw CLIError("Invalid Ya OK QR code: no QR code found in \(path) (photograph the whole code, "
                           + "in focus and with a margin around it, or pass the card text)", status: .invalidCard)
        }
        let shown = other.count > 60 ? String(other.prefix(57)) + "…" : other
        throw CLIError("Invalid Ya OK QR code: the QR code in \(path) is not a Ya OK card (it reads \"\(shown)\")",
                       status: .invalidCard)
    }
}
