import Foundation
import Testing
@testable import YaOKTransports

/// The beacon of PROTOCOL.md §7: 22 bytes, nothing but a magic, a random token and a port.
@Suite struct BeaconTests {
    let token: [UInt8] = Array(0x10..<0x20)

    @Test func encodesAsTheProtocolSays() {
        let beacon = Beacon(token: token, tcpPort: 0xB93A)
        #expect(beacon.encoded == Array("YOK1".utf8) + token + [0xB9, 0x3A])
        #expect(beacon.encoded.count == Beacon.length)
        #expect(Beacon(decoding: beacon.encoded[...]) == beacon)
    }

    /// The `lan-beacon` vector of docs/PROTOCOL.md §7, read from the document.
    @Test func matchesTheProtocolVector() throws {
        let v = try #require(try protocolVector("lan-beacon"))
        let token = try #require(hex(v["token"]))
        let port = try #require(v["tcp_port"].flatMap { UInt16($0) })
        let beacon = try #require(hex(v["beacon"]))
        #expect(Beacon(token: token, tcpPort: port).encoded == beacon)
        #expect(Beacon(decoding: beacon[...]) == Beacon(token: token, tcpPort: port))
    }

    @Test func anythingElseIsIgnored() {
        let good = Beacon(token: token, tcpPort: 47475).encoded
        #expect(Beacon(decoding: good.dropLast()) == nil)                  // short
        #expect(Beacon(decoding: (good + [0])[...]) == nil)                // long
        #expect(Beacon(decoding: (Array("YOK2".utf8) + good.dropFirst(4))[...]) == nil)  // other version
        #expect(Beacon(decoding: (good.dropLast(2) + [0, 0])[...]) == nil) // port 0
        #expect(Beacon(decoding: [][...]) == nil)
    }

    @Test func decodesFromASliceThatDoesNotStartAtZero() {
        let buffer = [0xAA, 0xBB] + Beacon(token: token, tcpPort: 1).encoded
        #expect(Beacon(decoding: buffer[2...])?.tcpPort == 1)
        #expect(Beacon(decoding: buffer[2...])?.token == token)
    }

    @Test func exactlyOneSideConnects() {
        let low = [UInt8](repeating: 0x01, count: 16)
        var high = low
        high[15] = 0x02
        #expect(Beacon.connects(own: low, peer: high))
        #expect(!Beacon.connects(own: high, peer: low))
        #expect(!Beacon.connects(own: low, peer: low))
        // Unsigned bytes, first most significant.
        #expect(Beacon.connects(own: [0x7f] + low.dropFirst(), peer: [0x80] + low.dropFirst()))
    }
}

/// The fields of the ```vector block named `name` in docs/PROTOCOL.md.
func protocolVector(_ name: String, filePath: String = #filePath) throws -> [String: String]? {
    var root = URL(fileURLWithPath: filePath)
    for _ in 0..<4 { root.deleteLastPathComponent() }  // Tests/YaOKTransportsTests/LAN/x.swift
    let doc = try String(contentsOf: root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
    var current: [String: String]?
    var lastKey: String?
    for line in doc.split(separator: "\n", omittingEmptySubsequences: false) {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if current == nil {
            if trimmed == "```vector" { current = [:] }
            continue
        }
        if trimmed == "```" {
            if current?["name"] == name { return current }
            current = nil
            continue
        }
        if line.hasPrefix("  "), let key = lastKey {
            current?[key, default: ""] += trimmed
        } else if let colon = line.firstIndex(of: ":") {
            let key = line[..<colon].trimmingCharacters(in: .whitespaces)
            current?[key] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            lastKey = key
        }
    }
    return nil
}

func hex(_ text: String?) -> [UInt8]? {
    guard let digits = text?.filter({ !$0.isWhitespace }), digits.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        guard let byte = UInt8(digits[i..<j], radix: 16) else { return nil }
        out.append(byte)
        i = j
    }
    return out
}
