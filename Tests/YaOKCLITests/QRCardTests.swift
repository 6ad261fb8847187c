import Foundation
import QRCode
import Testing

/// `yaok card --png` and `yaok contacts add PHOTO`: the card's QR code goes out as an image
/// that an independent decoder (zbarimg) reads, and comes back in from a PNG or a JPEG.
@Suite(.serialized) struct QRCardTests {
    static func tool(_ name: String, package: String) -> String? {
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin"]
        if let found = dirs.map({ "\($0)/\(name)" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            return found
        }
        Issue.record("\(name) not found: scripts/install-deps installs it (Debian package \(package))")
        return nil
    }

    /// Runs a tool; its stdout, or nil (recorded as a failure) when it exits non-zero.
    static func run(_ path: String, _ arguments: [String]) throws -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            Issue.record("\(path) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
            return nil
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// A JPEG "photo" of an image: laid on a larger grey, noisy background, as a camera
    /// would see it, and compressed by libjpeg's cjpeg at a lossy quality.
    static func photograph(_ image: GrayImage, to jpeg: String) throws {
        let width = image.width + 260, height = image.height + 180
        var pixels = [UInt8](repeating: 0, count: width * height)
        var state: UInt32 = 99
        for i in pixels.indices {
            state = state &* 1_664_525 &+ 1_013_904_223
            pixels[i] = UInt8(120 + Int(state >> 27))
        }
        for y in 0..<image.height {
            for x in 0..<image.width { pixels[(y + 70) * width + x + 150] = image.pixels[y * image.width + x] }
        }
        let pgm = jpeg + ".pgm"
        defer { try? FileManager.default.removeItem(atPath: pgm) }
        try Data(Array("P5\n\(width) \(height)\n255\n".utf8) + pixels).write(to: URL(fileURLWithPath: pgm))
        guard let cjpeg = tool("cjpeg", package: "libjpeg-turbo-progs") else { return }
        _ = try run(cjpeg, ["-quality", "70", "-outfile", jpeg, pgm])
    }

    static func scratch() -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("yaok-qr-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func cardPNGReadsBackWithZbarimg() throws {
        let bob = CLI.temporary("bob")
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try bob.run(["init", "--name", "Bob Example"]).status == 0)
        let png = dir.appendingPathComponent("bob.png").path
        let result = try bob.run(["card", "--png", png, "--json"])
        #expect(result.status == 0)
        let json = try #require(result.json as? [String: Any])
        let card = try #require(json["card"] as? String)
        #expect(json["png"] as? String == png)
        let text = try bob.run(["card", "--png", png])
        #expect(text.stdout.contains("QR code written to \(png)") && text.stdout.contains("▀"))

        guard let zbarimg = Self.tool("zbarimg", package: "zbar-tools") else { return }
        let decoded = try Self.run(zbarimg, ["--raw", "-q", "-Sdisable", "-Sqrcode.enable", png])
        #expect(decoded == card + "\n")

        let bad = try bob.run(["card", "--png", "/nonexistent-dir/bob.png"])
        #expect(bad.status == 1 && bad.stderr.contains("Cannot write /nonexistent-dir/bob.png"))
    }

    @Test func addFromPNGAndJPEG() throws {
        let alice = CLI.temporary("alice"), bob = CLI.temporary("bob"), carol = CLI.temporary("carol")
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (cli, name) in [(alice, "Alice"), (bob, "Bob"), (carol, "Carol")] {
            #expect(try cli.run(["init", "--name", name]).status == 0)
        }
        let bobPNG = dir.appendingPathComponent("bob.png").path
        let carolPNG = dir.appendingPathComponent("carol.png").path
        #expect(try bob.run(["card", "--png", bobPNG]).status == 0)
        #expect(try carol.run(["card", "--png", carolPNG, "--png-scale", "5"]).status == 0)
        let bobFingerprint = try #require((try bob.run(["card", "--json"]).json as? [String: Any])?["fingerprint"] as? String)

        // The PNG: the preview (name, fingerprint) comes before "Added".
        let preview = try alice.run(["contacts", "add", bobPNG, "--preview"])
        #expect(preview.status == 0 && preview.stdout.contains("Card read from \(bobPNG)") && preview.stdout.contains("Bob"))
        let added = try alice.run(["contacts", "add", bobPNG])
        #expect(added.status == 0, "\(added.stderr)")
        let lines = added.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "Card read from \(bobPNG)")
        #expect(lines.firstIndex { $0.contains("fingerprint") }.map { $0 < lines.firstIndex { $0.hasPrefix("Added Bob") } ?? -1 } == true)

        // A JPEG photo of Carol's PNG, with a .jpg name.
        let photo = dir.appendingPathComponent("photo.jpg").path
        try Self.photograph(try GrayImage(contentsOf: carolPNG), to: photo)
        let fromJPEG = try alice.run(["contacts", "add", photo, "--json"])
        #expect(fromJPEG.status == 0, "\(fromJPEG.stderr)")
        #expect((fromJPEG.json as? [String: Any])?["name"] as? String == "Carol")

        let list = try #require(try alice.run(["contacts", "list", "--json"]).json as? [[String: Any]])
        #expect(Set(list.compactMap { $0["name"] as? String }) == ["Bob", "Carol"])
        let bobContact = list.first { $0["name"] as? String == "Bob" }
        #expect((bobContact?["fingerprint"] as? String).map { bobFingerprint.hasPrefix($0) || $0.hasPrefix(bobFingerprint) } == true)

        // Again: already a contact, said before anything changes.
        let again = try alice.run(["contacts", "add", photo])
        #expect(again.status == 1 && again.stderr.contains("Carol is already in your contacts"))
    }

    @Test func photosThatHoldNoCard() throws {
        let alice = CLI.temporary("alice")
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try alice.run(["init", "--name", "Alice"]).status == 0)

        // A photo of nothing in particular.
        let blank = dir.appendingPathComponent("wall.jpg").path
        let stripes = (0..<(400 * 300)).map { UInt8(($0 % 400) / 50 % 2 == 0 ? 60 : 200) }
        try Self.photograph(GrayImage(width: 400, height: 300, pixels: stripes), to: blank)
        let none = try alice.run(["contacts", "add", blank])
        #expect(none.status == 1)
        #expect(none.stderr.contains("Invalid Ya OK QR code: no QR code found in \(blank)"))
        let noneJSON = try alice.run(["contacts", "add", blank, "--json"]).json as? [String: Any]
        #expect((noneJSON?["error"] as? String)?.hasPrefix("Invalid Ya OK QR code") == true)
        #expect(noneJSON?["status"] as? Int == 201)

        // A QR code, but not a card.
        let url = dir.appendingPathComponent("url.png").path
        try QRCode.encode("https://example.com/menu").writePNG(to: url)
        let notCard = try alice.run(["contacts", "add", url])
        #expect(notCard.status == 1)
        #expect(notCard.stderr.contains("Invalid Ya OK QR code: the QR code in \(url) is not a Ya OK card (it reads \"https://example.com/menu\")"))

        // Something that only looks like a JPEG.
        let broken = dir.appendingPathComponent("broken.jpg").path
        try Data([0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3]).write(to: URL(fileURLWithPath: broken))
        let damaged = try alice.run(["contacts", "add", broken])
        #expect(damaged.status == 1 && damaged.stderr.contains("Invalid Ya OK QR code: Cannot read the image \(broken)"))

        // Neither an image nor a card file.
        let other = dir.appendingPathComponent("notes.txt").path
        try Data("shopping list".utf8).write(to: URL(fileURLWithPath: other))
        #expect(try alice.run(["contacts", "add", other]).stderr.contains("neither a PNG or JPEG photo"))
        #expect((try alice.run(["contacts", "list", "--json"]).json as? [Any])?.isEmpty == true)
    }

    @Test func addFromATextFile() throws {
        let alice = CLI.temporary("alice"), bob = CLI.temporary("bob")
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try alice.run(["init", "--name", "Alice"]).status == 0)
        #expect(try bob.run(["init", "--name", "Bob"]).status == 0)
        let file = dir.appendingPathComponent("bob.txt")
        try Data(try bob.run(["card", "--no-qr"]).stdout.utf8).write(to: file)
        let added = try alice.run(["contacts", "add", file.path])
        #expect(added.status == 0 && added.stdout.contains("Added Bob"), "\(added.stderr)")
    }

    /// At a terminal the preview is followed by a question; "n" adds nothing. Driven through
    /// a pseudo-terminal by util-linux's `script`.
    @Test func aTerminalIsAskedFirst() throws {
        let alice = CLI.temporary("alice"), bob = CLI.temporary("bob")
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try alice.run(["init", "--name", "Alice"]).status == 0)
        #expect(try bob.run(["init", "--name", "Bob"]).status == 0)
        let png = dir.appendingPathComponent("bob.png").path
        #expect(try bob.run(["card", "--png", png]).status == 0)
        guard let script = Self.tool("script", package: "util-linux") else { return }
        func add(answering answer: String) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: script)
            let command = [CLI.executable.path, "--home", alice.home, "contacts", "add", png].joined(separator: " ")
            process.arguments = ["-qec", command, "/dev/null"]
            var env = ProcessInfo.processInfo.environment
            env["YAOK_PIN"] = alice.pin
            process.environment = env
            let input = Pipe(), output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            input.fileHandleForWriting.write(Data("\(answer)\n".utf8))
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        let declined = try add(answering: "n")
        #expect(declined.contains("Add Bob to your contacts? [y/N]") && declined.contains("Not added"))
        #expect((try alice.run(["contacts", "list", "--json"]).json as? [Any])?.isEmpty == true)
        let accepted = try add(answering: "y")
        #expect(accepted.contains("Added Bob"))
        #expect((try alice.run(["contacts", "list", "--json"]).json as? [Any])?.count == 1)
    }

    /// The terminal drawing itself scans: read back from the half blocks into pixels, it
    /// decodes (zbarimg) to the card, and even a 50-letter name's card fits 80 columns.
    @Test(arguments: ["Bo", String(repeating: "Long Name ", count: 5)])
    func terminalDrawingScans(name: String) throws {
        let cli = CLI.temporary("term")
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try cli.run(["init", "--name", name]).status == 0)
        let card = try #require((try cli.run(["card", "--json"]).json as? [String: Any])?["card"] as? String)
        // --light-background: ink draws dark modules.
        let drawing = try cli.run(["card", "--light-background"]).stdout
            .split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { !$0.isEmpty && $0.allSatisfy { " ▀▄█".contains($0) } }
            .map(Array.init)
        let width = try #require(drawing.first?.count)
        #expect(width <= 80 && drawing.allSatisfy { $0.count == width })
        let scale = 4, side = width * scale, height = drawing.count * 2 * scale
        var pixels = [UInt8](repeating: 255, count: side * height)
        for (row, line) in drawing.enumerated() {
            for (column, glyph) in line.enumerated() {
                for half in 0..<2 where glyph == "█" || glyph == (half == 0 ? "▀" : "▄") {
                    for dy in 0..<scale {
                        for dx in 0..<scale { pixels[((row * 2 + half) * scale + dy) * side + column * scale + dx] = 0 }
                    }
                }
            }
        }
        let pgm = dir.appendingPathComponent("terminal.pgm").path
        try Data(Array("P5\n\(side) \(height)\n255\n".utf8) + pixels).write(to: URL(fileURLWithPath: pgm))
        guard let zbarimg = Self.tool("zbarimg", package: "zbar-tools") else { return }
        #expect(try Self.run(zbarimg, ["--raw", "-q", "-Sdisable", "-Sqrcode.enable", pgm]) == card + "\n")
    }
}
