import Testing
@testable import YaOKTransports

/// The beacon of PROTOCOL.md §6: 22 bytes, nothing but a magic, a random token and a port.
@Suite struct BeaconTests {
    let token: [UInt8] = Array(0x10..<0x20)

    @Test func encodesAsTheProtocolSays() {
        let beacon = Beacon(token: token, tcpPort: 0xB93A)
        #expect(beacon.encoded == Array("YOK1".utf8) + token + [0xB9, 0x3A])
        #expect(beacon.encoded.count == Beacon.length)
        #expect(Beacon(decoding: beacon.encoded[...]) == beacon)
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
