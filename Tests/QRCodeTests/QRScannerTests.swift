import Foundation
import Testing
@testable import QRCode

/// Reading a QR code back from an image file with our own loader (libpng, libjpeg) and ZBar:
/// what `yaok contacts add photo.jpg` does.
@Suite struct QRScannerTests {
    static let card = ZbarRoundTripTests.card(payloadBytes: 220, seed: 42)

    static func temporary(_ ext: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("qrscan-\(UUID().uuidString).\(ext)").path
    }

    @Test func pngWrittenByWritePNG() throws {
        let path = Self.temporary("png")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try QRCode.encode(Self.card).writePNG(to: path)
        let image = try GrayImage(contentsOf: path)
        let code = try QRCode.encode(Self.card)
        #expect(image.width == (code.size + 8) * 8 && image.height == image.width)
        #expect(try QRScanner.scan(imageAt: path) == [Array(Self.card.utf8)])
    }

    /// A JPEG made by libjpeg's own cjpeg (lossy, from a PGM), named .jpg.
    @Test func jpegMadeByCjpeg() throws {
        let pgm = Self.temporary("pgm"), jpeg = Self.temporary("jpg")
        defer { for p in [pgm, jpeg] { try? FileManager.default.removeItem(atPath: p) } }
        try Data(QRCode.encode(Self.card).pgm(quietZone: 4, scale: 6)).write(to: URL(fileURLWithPath: pgm))
        try Self.cjpeg(pgm, to: jpeg, quality: 60)
        #expect(try QRScanner.scan(imageAt: jpeg) == [Array(Self.card.utf8)])
    }

    /// Something like a photo: the code small, turned a quarter, off-centre on a grey,
    /// noisy background, at a scale that is not a whole number of pixels a module.
    @Test func photoLikeImage() throws {
        let code = try QRCode.encode(Self.card)
        let (side, sharp) = code.grayPixels(quietZone: 4, scale: 5)
        let width = 900, height = 700
        var pixels = [UInt8](repeating: 150, count: width * height)
        var state: UInt32 = 7
        for i in pixels.indices {
            state = state &* 1_664_525 &+ 1_013_904_223
            pixels[i] = UInt8(130 + Int(state >> 27))
        }
        let target = Int(Double(side) * 0.83)
        for y in 0..<target {
            for x in 0..<target {
                // Turned 90°: source column = y, source row = side - 1 - x.
                let sx = y * side / target, sy = side - 1 - x * side / target
                let value = sharp[sy * side + sx] == 0 ? 30 : 220
                pixels[(120 + y) * width + 200 + x] = UInt8(value)
            }
        }
        #expect(QRScanner.scan(GrayImage(width: width, height: height, pixels: pixels)) == [Array(Self.card.utf8)])
    }

    @Test func imageWithoutQRCode() throws {
        let pixels = (0..<(300 * 200)).map { UInt8(truncatingIfNeeded: $0 % 300 < 150 ? 40 : 210) }
        #expect(QRScanner.scan(GrayImage(width: 300, height: 200, pixels: pixels)).isEmpty)
    }

    @Test func notAnImage() throws {
        let path = Self.temporary("jpg")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data("yaok:1:not an image".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: ImageError.unknownFormat(path: path)) { try GrayImage(contentsOf: path) }
        #expect(throws: ImageError.cannotOpen(path: path + ".missing", errno: ENOENT)) {
            try GrayImage(contentsOf: path + ".missing")
        }
    }

    /// A PNG cut short and a JPEG of garbage are errors with libpng's and libjpeg's
    /// messages, not crashes (libjpeg would otherwise exit the process).
    @Test func damagedImages() throws {
        let png = Self.temporary("png"), jpeg = Self.temporary("jpg")
        defer { for p in [png, jpeg] { try? FileManager.default.removeItem(atPath: p) } }
        try QRCode.encode(Self.card).writePNG(to: png)
        let whole = try Data(contentsOf: URL(fileURLWithPath: png))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: png))
        try Data([0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0x41, count: 64)).write(to: URL(fileURLWithPath: jpeg))
        for path in [png, jpeg] {
            do {
                _ = try GrayImage(contentsOf: path)
                Issue.record("\(path) was read")
            } catch ImageError.decodeFailed(let p, let message) {
                #expect(p == path)
                #expect(!message.isEmpty)
            }
        }
    }

    @Test func writeToMissingDirectory() throws {
        let path = "/nonexistent-yaok-dir/card.png"
        #expect(throws: ImageError.self) { try QRCode.encode("x").writePNG(to: path) }
    }

    static func cjpeg(_ input: String, to output: String, quality: Int) throws {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map { "\($0)/cjpeg" } + ["/usr/bin/cjpeg"]
        guard let cjpeg = path.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            Issue.record("cjpeg not found: scripts/install-deps installs it (Debian package libjpeg-turbo-progs)")
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: cjpeg)
        process.arguments = ["-quality", "\(quality)", "-outfile", output, input]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "cjpeg failed")
    }
}
