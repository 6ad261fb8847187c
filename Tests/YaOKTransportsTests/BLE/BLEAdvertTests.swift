import Foundation
import Testing
@testable import YaOKTransports

/// The advertisement of PROTOCOL.md §9.1: one Service Data structure, the Ya OK UUID, a
/// version, a random token and (version 2) the listener's PSM; version 1 is still read;
/// anything a nearby radio sends is parsed without harm.
@Suite struct BLEAdvertTests {
    let token: [UInt8] = Array(0x10..<0x18)

    @Test func encodesAsTheProtocolSays() {
        let advert = BLEAdvert(token: token, psm: 0xc5)
        let bytes = advert.encoded
        #expect(bytes.count == BLEAdvert.encodedLength)
        #expect(bytes.count + 3 == 31)  // with the kernel's Flags structure: exactly the legacy limit
        #expect(bytes[0] == 27 && bytes[1] == 0x21)
        #expect(Array(bytes[2..<18]) == BLEAdvert.serviceUUID.reversed())  // little-endian on air
        #expect(bytes[18] == 0x02)
        #expect(Array(bytes[19..<27]) == token)
        #expect(bytes[27] == 0xc5)
        #expect(BLEAdvert(parsing: bytes) == advert)
    }

    /// The `ble-advert` vector (version 2) of docs/PROTOCOL.md §9.1, read from the document.
    @Test func matchesTheProtocolVector() throws {
        let v = try #require(try protocolVector("ble-advert"))
        let token = try #require(hex(v["token"]))
        let psm = try #require(v["psm"].flatMap { UInt16($0.dropFirst(2), radix: 16) })
        let ad = try #require(hex(v["ad"]))
        #expect(BLEAdvert(token: token, psm: psm).encoded == ad)
        let received = try #require(hex(v["received"]))
        #expect(received.count == 31)
        #expect(BLEAdvert(parsing: received) == BLEAdvert(token: token, psm: psm))
    }

    /// Version 1 (no PSM: it meant 0x0081) is still read: `ble-advert-v1`.
    @Test func version1IsStillRead() throws {
        let v = try #require(try protocolVector("ble-advert-v1"))
        let token = try #require(hex(v["token"]))
        let ad = try #require(hex(v["ad"]))
        let parsed = try #require(BLEAdvert(parsing: ad))
        #expect(parsed.token == token && parsed.psm == 0x0081)
        #expect(BLEAdvert(token: token).encodedVersion1 == ad)
    }

    @Test func uuidTextMatchesBytes() {
        let text = BLEAdvert.serviceUUIDString.replacingOccurrences(of: "-", with: "")
        #expect(hex(text) == BLEAdvert.serviceUUID)
    }

    @Test func foundAmongOtherStructures() {
        let flags: [UInt8] = [0x02, 0x01, 0x06]
        let name: [UInt8] = [0x05, 0x09] + Array("abcd".utf8)
        #expect(BLEAdvert(parsing: flags + name + BLEAdvert(token: token).encoded)?.token == token)
        // Padding after it (zero length) ends the walk harmlessly.
        #expect(BLEAdvert(parsing: flags + BLEAdvert(token: token).encoded + [0, 0, 0])?.token == token)
        // From a slice that does not start at zero.
        let buffer: [UInt8] = [0xAA] + flags + BLEAdvert(token: token).encoded
        #expect(BLEAdvert(parsing: buffer[1...])?.token == token)
    }

    @Test func anythingElseIsIgnored() {
        let good = BLEAdvert(token: token, psm: 0x81).encoded
        #expect(BLEAdvert(parsing: []) == nil)
        #expect(BLEAdvert(parsing: Array(good.dropLast())) == nil)               // runs past the end
        var version = good
        version[18] = 0x03
        #expect(BLEAdvert(parsing: version) == nil)                              // a later version
        version[18] = 0x01
        #expect(BLEAdvert(parsing: version) == nil)                              // version 1 has no PSM
        var v2Short = BLEAdvert(token: token).encodedVersion1
        v2Short[18] = 0x02
        #expect(BLEAdvert(parsing: v2Short) == nil)                              // version 2 without its PSM
        var psm0 = good
        psm0[27] = 0
        #expect(BLEAdvert(parsing: psm0) == nil)                                 // no PSM 0
        var otherUUID = good
        otherUUID[5] ^= 0xff
        #expect(BLEAdvert(parsing: otherUUID) == nil)                            // someone else's service
        var longer = good
        longer[0] = 28
        #expect(BLEAdvert(parsing: longer + [0]) == nil)                         // another length
        var type16 = good
        type16[1] = 0x16
        #expect(BLEAdvert(parsing: type16) == nil)                               // 16-bit service data
        #expect(BLEAdvert(parsing: [0xff, 0x21] + good) == nil)                  // length past the end first
        #expect(BLEAdvert(parsing: [17, 0x21] + BLEAdvert.serviceUUID.reversed()) == nil)  // no version byte
    }

    /// Whatever arrives over the air (any bytes, any lengths) parses or is refused; never a
    /// crash or a read out of bounds.
    @Test func hostileAdvertisingData() {
        var rng = SystemRandomNumberGenerator()
        let good = BLEAdvert(token: token).encoded
        for i in 0..<20_000 {
            var data = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if i % 3 == 0 {  // near misses: the real structure, mutated
                data = good
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    data[Int.random(in: 0..<data.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
                data = Array(data.prefix(Int.random(in: 0...data.count, using: &rng)))
            }
            if let parsed = BLEAdvert(parsing: data) {
                #expect(parsed.token.count == BLEAdvert.tokenLength && (1...0xff).contains(parsed.psm))
            }
        }
    }

    @Test func exactlyOneSideConnects() {
        let low = [UInt8](repeating: 0x01, count: 8)
        var high = low
        high[7] = 0x02
        #expect(BLEAdvert.connects(own: low, peer: high))
        #expect(!BLEAdvert.connects(own: high, peer: low))
        #expect(!BLEAdvert.connects(own: low, peer: low))
        #expect(BLEAdvert.connects(own: [0x7f] + low.dropFirst(), peer: [0x80] + low.dropFirst()))
    }

    @Test func addresses() {
        let bytes = BLEAddress.parse("00:aa:01:00:00:0F")
        #expect(bytes == [0x00, 0xAA, 0x01, 0x00, 0x00, 0x0F])
        let a = BLEAddress(bytes: bytes!, kind: .lePublic)
        #expect(a.text == "00:AA:01:00:00:0F")
        #expect(a.littleEndian == [0x0F, 0x00, 0x00, 0x01, 0xAA, 0x00])
        #expect(BLEAddress(littleEndian: a.littleEndian[...], kind: .lePublic) == a)
        #expect(BLEAddress.parse("00:AA:01:00:00") == nil)
        #expect(BLEAddress.parse("00:AA:01:00:00:0G") == nil)
        #expect(BLEAddress.parse("000:A:01:00:00:00") == nil)
    }
}
