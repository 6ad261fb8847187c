import CYaOK
import Testing
@testable import YaOKFFI

/// The wire (interoperability) entry points: the JSON of docs/ABI.md's "packet", the exact
/// statuses of PROTOCOL.md §4.1, and frames and fragments equal to the §4.6/§4.7 vectors.
/// (The Python tests check every wire-* vector; these guard the Swift side alone.)
@Suite struct WireFFITests {
    static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.filter { !$0.isWhitespace }.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    /// wire-routed-message
    static let message = hex("010107 00112233445566778899aabbccddeeff 018bcfe56800 2760 5d0d40da0e596251 0004 deadbeef")

    func decode(_ packet: [UInt8]) -> (Int32, String?) {
        var out: UnsafeMutablePointer<CChar>?
        let status = packet.withUnsafeBufferPointer { yaok_packet_decode($0.baseAddress, $0.count, &out) }
        defer { yaok_string_free(out) }
        return (status, out.map { String(cString: $0) })
    }

    @Test func aRoutedPacketDecodesToItsFields() {
        let (status, json) = decode(Self.message)
        #expect(status == Int32(YAOK_OK))
        #expect(json == #"{"version":1,"type":"message","hop_limit":7,"message_id":"00112233445566778899aabbccddeeff","#
                + #""created_ms":1700000000000,"lifetime_min":10080,"expires_ms":1700604800000,"#
                + #""routing_tag":"5d0d40da0e596251","#
                + #""authenticated":"010100112233445566778899aabbccddeeff018bcfe5680027605d0d40da0e5962510004","#
                + #""payload":"deadbeef"}"#)
    }

    @Test func malformedPacketsGetTheProtocolsStatuses() {
        #expect(decode([]).0 == Int32(YAOK_E_MALFORMED_PACKET))
        #expect(decode(Self.hex("02010700")).0 == Int32(YAOK_E_UNSUPPORTED_VERSION))
        #expect(decode(Self.hex("0106070011")).0 == Int32(YAOK_E_UNKNOWN_PACKET_TYPE))
        #expect(decode(Self.hex("0103000101ff")).0 == Int32(YAOK_E_MALFORMED_PACKET))
        #expect(decode(Self.message + [0]) == (Int32(YAOK_E_MALFORMED_PACKET), nil))
        var out: UnsafeMutablePointer<CChar>?
        #expect(yaok_packet_decode(nil, 4, &out) == Int32(YAOK_E_NULL_ARGUMENT) && out == nil)
        #expect(Self.message.withUnsafeBufferPointer { yaok_packet_decode($0.baseAddress, $0.count, nil) }
                == Int32(YAOK_E_NULL_ARGUMENT))
    }

    @Test func framesAndFragmentsMatchTheVectors() {
        var frame: UnsafeMutablePointer<UInt8>?
        var frameLength = 0
        #expect(Self.message.withUnsafeBufferPointer { yaok_frame_encode($0.baseAddress, $0.count, &frame, &frameLength) }
                == Int32(YAOK_OK))
        #expect(frame.map { Array(UnsafeBufferPointer(start: $0, count: frameLength)) } == [0x00, 0x29] + Self.message)
        yaok_bytes_free(frame, frameLength)

        var json: UnsafeMutablePointer<CChar>?
        #expect(Self.message.withUnsafeBufferPointer { yaok_fragment_split($0.baseAddress, $0.count, 20, 0x1234, &json) }
                == Int32(YAOK_OK))
        #expect(json.map { String(cString: $0) } == #"["0104123400000004010107001122334455667788","#
                + #""010412340001000499aabbccddeeff018bcfe568","#
                + #""01041234000200040027605d0d40da0e59625100","#
                + #""010412340003000404deadbeef"]"#)
        yaok_string_free(json)
        #expect(Self.message.withUnsafeBufferPointer { yaok_fragment_split($0.baseAddress, $0.count, 19, 0, &json) }
                == Int32(YAOK_E_INVALID_ARGUMENT))
    }
}
