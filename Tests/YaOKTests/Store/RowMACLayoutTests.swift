import Testing
@testable import YaOKStore

/// The bytes a row MAC covers and a column's associated data are stored commitments: every
/// row written before must still verify, so the way they are built (one buffer, no array
/// per field: issue 20) must not change a byte. Each layout is spelled out here field by
/// field: a length-prefixed label, integers as 8 bytes big-endian, blobs and texts
/// length-prefixed, optionals as a presence byte and the value.
@Suite struct RowMACLayoutTests {
    private static func be(_ v: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: v) >> (56 - 8 * $0)) }
    }

    private static func label(_ s: String) -> [UInt8] { be(Int64(s.utf8.count)) + Array(s.utf8) }

    @Test func aMessageRowsInput() {
        let id = (0..<16).map { UInt8($0 * 7) }
        let mac = RowMAC.message(conversation: -2, messageID: id, direction: 1, status: 3, senderTimestamp: 1_700_000_000_123,
                                 createdAt: 0x0102_0304_0506_0708, sentAt: nil, receivedAt: 42, unread: true)
        let expected = Self.label("YaOK-row-message-v1") + Self.be(-2) + Self.be(16) + id + Self.be(1) + Self.be(3)
            + Self.be(1_700_000_000_123) + Self.be(0x0102_0304_0506_0708) + [0] + [1] + Self.be(42) + Self.be(1)
        #expect(mac.bytes == expected)
    }

    @Test func anOutboxRowsInput() {
        let id = [UInt8](repeating: 0xAB, count: 16)
        let packet = (0..<40).map { UInt8($0) }
        let mac = RowMAC.outbox(packetID: id, kind: 1, contactID: 9, expiresAt: -1, packet: packet)
        let expected = Self.label("YaOK-row-outbox-v1") + Self.be(16) + id + Self.be(1) + Self.be(9) + Self.be(-1)
            + Self.be(40) + packet
        #expect(mac.bytes == expected)
    }

    @Test func textIsLengthPrefixedUTF8() {
        var mac = RowMAC("L")
        mac.text("é✓")
        #expect(mac.bytes == Self.label("L") + Self.be(5) + Array("é✓".utf8))
    }

    @Test func aMessageBodysAssociatedData() {
        let id = [UInt8](repeating: 5, count: 16)
        #expect(RowAD.messageBody(conversation: 0x1122_3344_5566_7788, messageID: id, direction: 1)
                == Array("YaOK-message-body-v1".utf8) + Self.be(0x1122_3344_5566_7788) + id + [1])
        #expect(RowAD.bigEndian(0xFF00_0000_0000_0001) == [0xFF, 0, 0, 0, 0, 0, 0, 1])
    }
}
