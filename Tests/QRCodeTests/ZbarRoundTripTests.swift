import Foundation
import Testing
@testable import QRCode

/// The real proof: an independent decoder (ZBar's zbarimg) must read back exactly what was
/// encoded (by libqrencode, drawn by our renderer, written by libpng), across versions and
/// levels. A missing zbarimg fails the suite, since without it nothing here is proven.
@Suite struct ZbarRoundTripTests {
    /// Deterministic pseudo-random bytes (an LCG), so failures reproduce.
    static func bytes(_ count: Int, seed: UInt32) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
    }

    /// Card-like text: "yaok:1:" and base64url, as ContactCard.text produces.
    static func card(payloadBytes: Int, seed: UInt32) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let chars = bytes(payloadBytes * 4 / 3, seed: seed).map { alphabet[Int($0 & 63)] }
        return "yaok:1:" + String(chars)
    }

    /// A payload with a short name, so that test reports stay readable.
    struct Payload: CustomTestStringConvertible, Sendable {
        let name: String
        let text: String
        var testDescription: String { "\(name) (\(text.utf8.count) bytes)" }
    }

    static let payloads: [Payload] = [
        Payload(name: "one letter", text: "a"),
        Payload(name: "HELLO WORLD", text: "HELLO WORLD"),
        Payload(name: "tiny card", text: "yaok:1:AQ"),
        Payload(name: "card, short name", text: card(payloadBytes: 131, seed: 1)),
        Payload(name: "card, longer name", text: card(payloadBytes: 160, seed: 2)),
        Payload(name: "card, long name", text: card(payloadBytes: 220, seed: 3)),
        // Cards carry a 64-byte key proof since issue 8 §3: 195 bytes plus the name.
        Payload(name: "card with key proof, short name", text: card(payloadBytes: 200, seed: 4)),
        Payload(name: "card with key proof, 50-letter name", text: card(payloadBytes: 245, seed: 5)),
        Payload(name: "prose", text: String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 10)),
        // Long runs of one byte make large uniform areas: the masks must break them up.
        Payload(name: "one repeated byte", text: String(repeating: "x", count: 900)),
        // UTF-8: ZBar recognises it and prints it unchanged.
        Payload(name: "UTF-8", text: "Привет, Ya OK! Grüße ✓"),
    ]

    @Test(arguments: payloads, ErrorCorrectionLevel.allCases)
    func roundTrip(payload: Payload, level: ErrorCorrectionLevel) throws {
        let code = try QRCode.encode(payload.text, ecc: level)
        #expect(try Self.decode(code) == Array(payload.text.utf8), "version \(code.version) \(level)")
    }

    /// Versions at the top end: the biggest symbols have the most blocks and the most
    /// alignment patterns.
    @Test(arguments: [(2331, ErrorCorrectionLevel.medium), (1273, .high), (2953, .low), (1000, .quartile)])
    func largeSymbols(count: Int, level: ErrorCorrectionLevel) throws {
        let text = String(Self.bytes(count, seed: UInt32(count)).map { Character(Unicode.Scalar(0x30 + $0 % 43)) })
        let code = try QRCode.encode(text, ecc: level)
        #expect(try Self.decode(code, scale: 3) == Array(text.utf8), "version \(code.version) \(level)")
    }

    /// Payloads from 1 byte to the most a symbol holds at level M, so that versions across
    /// 1...40 are used; each must be 17 + 4 × version modules wide.
    @Test func versionsAcrossTheRange() throws {
        var versions = Set<Int>()
        for count in stride(from: 1, through: 2331, by: 58) + [2331] {
            let text = String(Self.bytes(count, seed: UInt32(count)).map { Character(Unicode.Scalar(0x41 + $0 % 26)) })
            let code = try QRCode.encode(text, ecc: .medium)
            versions.insert(code.version)
            #expect(code.size == 17 + 4 * code.version)
            #expect(try Self.decode(code, scale: code.version > 20 ? 3 : 4) == Array(text.utf8), "\(count) bytes, version \(code.version)")
        }
        #expect(versions.contains(1) && versions.contains(40) && versions.count >= 30)
    }

    @Test func tooLongAndEmptyAreErrors() {
        #expect(throws: QRCode.EncodingError.dataTooLong(bytes: 2332)) { try QRCode.encode([UInt8](repeating: 0, count: 2332)) }
        #expect(throws: QRCode.EncodingError.dataTooLong(bytes: 1274)) { try QRCode.encode([UInt8](repeating: 0, count: 1274), ecc: .high) }
        #expect(throws: QRCode.EncodingError.empty) { try QRCode.encode("") }
    }

    /// Arbitrary bytes, 0x00...0xFF, read back with ZBar's binary option (no charset guess).
    @Test func binaryPayload() throws {
        let payload = (0...255).map { UInt8($0) } + Self.bytes(100, seed: 99)
        let code = try QRCode.encode(payload, ecc: .quartile)
        #expect(try Self.decode(code, binary: true) == payload)
    }

    /// The PGM renderer too (zbarimg reads it without a PNG library in between).
    @Test func pgmRoundTrip() throws {
        let text = Self.card(payloadBytes: 200, seed: 7)
        #expect(try Self.decode(QRCode.encode(text), pgm: true) == Array(text.utf8))
    }

    // MARK: Running zbarimg

    static func zbarimgPath() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (path.split(separator: ":").map(String.init) + ["/usr/bin"])
            .map { $0 + "/zbarimg" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Writes the symbol as a PNG (as `yaok card --png` does) or a PGM, runs zbarimg on it
    /// and returns what it printed (the trailing newline zbarimg adds removed).
    static func decode(_ code: QRCode, scale: Int = 4, binary: Bool = false, pgm: Bool = false) throws -> [UInt8] {
        guard let zbarimg = zbarimgPath() else {
            Issue.record("zbarimg not found: scripts/install-deps installs it (Debian package zbar-tools)")
            return []
        }
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("qrcode-test-\(UUID().uuidString).\(pgm ? "pgm" : "png")")
        if pgm {
            try Data(code.pgm(quietZone: 4, scale: scale)).write(to: file)
        } else {
            try code.writePNG(to: file.path, quietZone: 4, scale: scale)
        }
        defer { try? FileManager.default.removeItem(at: file) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: zbarimg)
        process.arguments = ["--raw", "-q"] + (binary ? ["-Sbinary"] : []) + ["-Sdisable", "-Sqrcode.enable", file.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "zbarimg found no QR code (exit \(process.terminationStatus))")
        var bytes = [UInt8](data)
        // Text mode ends each symbol with a newline; binary mode prints the bytes alone.
        if !binary, bytes.last == 0x0A { bytes.removeLast() }
        return bytes
    }
}
