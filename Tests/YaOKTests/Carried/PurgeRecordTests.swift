import Testing
@testable import YaOKSupport
@testable import YaOKWire

/// The purge record (docs/PROTOCOL.md §10.6): a batch of claims, decoded strictly.
@Suite struct PurgeRecordTests {
    func claim(_ b: UInt8) -> [UInt8] { [UInt8](repeating: b, count: 16) }


    @Test func roundTripIsSortedAndDeduplicated() throws {
        let record = try PurgeRecord(claims: [claim(3), claim(1), claim(3)])
        #expect(record.claims == [claim(1), claim(3)])
        let bytes = record.encode()
        #expect(bytes == [1, 7, 2] + claim(1) + claim(3))
        #expect(try PurgeRecord.decode(bytes) == record)
        let full = try PurgeRecord(claims: (0..<255).map { claim(UInt8($0)) })
        #expect(full.encode().count == PurgeRecord.maxLength)
        #expect(try PurgeRecord.decode(full.encode()) == full)
    }

    @Test func badInputIsRefused() throws {
        let good = try PurgeRecord(claims: [claim(1), claim(2)]).encode()
        var v = good; v[0] = 9
        #expect(errorCode { _ = try PurgeRecord.decode(v) } == .unsupportedVersion)
        var t = good; t[1] = 6
        #expect(errorCode { _ = try PurgeRecord.decode(t) } == .unknownPacketType)
        #expect(errorCode { _ = try PurgeRecord.decode([1, 7, 0]) } == .malformedPacket)
        #expect(errorCode { _ = try PurgeRecord.decode(good + [0]) } == .malformedPacket)
        #expect(errorCode { _ = try PurgeRecord.decode(Array(good.dropLast())) } == .malformedPacket)
        var count = good; count[2] = 255
        #expect(errorCode { _ = try PurgeRecord.decode(count) } == .malformedPacket)
        // Out of order and duplicates: one canonical encoding only.
        #expect(errorCode { _ = try PurgeRecord.decode([1, 7, 2] + claim(2) + claim(1)) } == .malformedPacket)
        #expect(errorCode { _ = try PurgeRecord.decode([1, 7, 2] + claim(2) + claim(2)) } == .malformedPacket)
        for cut in 0..<3 { #expect(errorCode { _ = try PurgeRecord.decode(Array(good.prefix(cut))) } == .malformedPacket) }
        #expect(errorCode { _ = try PurgeRecord(claims: []) } == .invalidArgument)
        #expect(errorCode { _ = try PurgeRecord(claims: [[1, 2, 3]]) } == .invalidArgument)
        #expect(errorCode { _ = try PurgeRecord(claims: (0..<256).map { [UInt8](repeating: UInt8($0 % 256), count: 15) + [UInt8($0 / 256)] }) } == .invalidArgument)
        // A huge count with megabytes behind it is refused on its length, nothing copied.
        #expect(errorCode { _ = try PurgeRecord.decode([1, 7, 1] + [UInt8](repeating: 0, count: 1 << 20)) } == .malformedPacket)
    }
}
