import Testing
@testable import YaOKSupport
@testable import YaOKWire

/// The carried packet's wire layout (docs/PROTOCOL.md §10.2): strict decoding, each field's
/// status, time checks, hostile lengths.
@Suite struct CarriedPacketTests {
    let now: Int64 = 1_700_000_000_000

    func packet(payload: [UInt8] = [UInt8](repeating: 0xab, count: 128), budget: UInt8 = 8) throws -> CarriedPacket {
        try CarriedPacket(hopLimit: 7, copyBudget: budget,
                          expiryHour: try CarriedPacket.expiryHour(createdMs: now, lifetimeMs: 86_400_000),
                          routingTag: RoutingTag(value: 0x0102030405060708), claimHash: Array(0..<16), payload: payload)
    }


    @Test func roundTrip() throws {
        let p = try packet()
        let bytes = p.encode()
        #expect(bytes.count == CarriedPacket.headerLength + 128)
        #expect(Array(bytes[0..<4]) == [1, 6, 7, 8])
        #expect(try CarriedPacket.decode(bytes) == p)
        #expect(try CarriedPacket.decode(bytes).encode() == bytes)
        // The authenticated header is the packet's header without bytes 2 and 3.
        #expect(p.authenticatedHeader == Array(bytes[0..<2]) + Array(bytes[4..<CarriedPacket.headerLength]))
        #expect(p.authenticatedHeader.count == CarriedPacket.authenticatedHeaderLength)
    }

    @Test func expiryIsInWholeHoursRoundedUp() throws {
        // 1700000000000 ms is 472222.22 h: one day later rounds up to the next whole hour.
        let hour = try CarriedPacket.expiryHour(createdMs: now, lifetimeMs: 86_400_000)
        #expect(hour == 472_247)
        #expect(try CarriedPacket.expiryHour(createdMs: 3_600_000, lifetimeMs: 3_600_000) == 2)
        #expect(try CarriedPacket.expiryHour(createdMs: 3_600_000, lifetimeMs: 1) == 2)
        #expect(errorCode { _ = try CarriedPacket.expiryHour(createdMs: now, lifetimeMs: CarriedPacket.maxLifetimeMs + 1) } == .invalidArgument)
        #expect(errorCode { _ = try CarriedPacket.expiryHour(createdMs: now, lifetimeMs: 0) } == .invalidArgument)
        #expect(errorCode { _ = try CarriedPacket.expiryHour(createdMs: -1, lifetimeMs: 1) } == .invalidArgument)
    }

    @Test func eachPrefixFieldHasItsStatus() throws {
        let bytes = try packet().encode()
        var v = bytes; v[0] = 2
        #expect(errorCode { _ = try CarriedPacket.decode(v) } == .unsupportedVersion)
        for t: UInt8 in [0x01, 0x02, 0x05, 0x07, 0xff] {
            var w = bytes; w[1] = t
            #expect(errorCode { _ = try CarriedPacket.decode(w) } == .unknownPacketType)
        }
        var b = bytes; b[3] = 0
        #expect(errorCode { _ = try CarriedPacket.decode(b) } == .malformedPacket)
        // Hop limit and budget are free bytes: any value but a budget of 0 decodes.
        var h = bytes; h[2] = 0; h[3] = 255
        #expect(try CarriedPacket.decode(h).copyBudget == 255)
    }

    @Test func lengthsMustBeExact() throws {
        let bytes = try packet().encode()
        #expect(errorCode { _ = try CarriedPacket.decode(bytes + [0]) } == .malformedPacket)
        #expect(errorCode { _ = try CarriedPacket.decode(Array(bytes.dropLast())) } == .malformedPacket)
        for cut in 0..<CarriedPacket.headerLength {
            #expect(errorCode { _ = try CarriedPacket.decode(Array(bytes.prefix(cut))) } == .malformedPacket)
        }
        var length = bytes; length[33] ^= 1
        #expect(errorCode { _ = try CarriedPacket.decode(length) } == .malformedPacket)
        // An empty payload is well-formed at this layer (the seal refuses it).
        #expect(try CarriedPacket.decode(try packet(payload: []).encode()).payload.isEmpty)
    }

    @Test func oversizedInputIsRefusedBeforeItIsRead() throws {
        // A header that claims the largest payload, then 64 KiB: refused by the packet limit.
        var huge = try packet().encode().prefix(CarriedPacket.headerLength)
        huge[32] = 0xff; huge[33] = 0xff
        let big = Array(huge) + [UInt8](repeating: 0, count: 65_536)
        #expect(errorCode { _ = try CarriedPacket.decode(big) } == .malformedPacket)
        // The largest legal payload decodes; one more byte cannot be built.
        let max = try packet(payload: [UInt8](repeating: 1, count: CarriedPacket.maxPayloadLength))
        #expect(max.encode().count == Wire.maxPacketLength)
        #expect(try CarriedPacket.decode(max.encode()) == max)
        #expect(errorCode { _ = try packet(payload: [UInt8](repeating: 1, count: CarriedPacket.maxPayloadLength + 1)) } == .invalidArgument)
        #expect(errorCode { _ = try packet(budget: 0) } == .invalidArgument)
    }

    @Test func timeIsCheckedAgainstTheExpiry() throws {
        let p = try packet()
        #expect(throws: Never.self) { try p.checkTime(nowMs: now) }
        #expect(errorCode { try p.checkTime(nowMs: p.expiresAtMs) } == .expired)
        #expect(errorCode { try p.checkTime(nowMs: p.expiresAtMs - 1) } == nil)
        // 14 days, the hour of rounding and 15 minutes of skew ahead: accepted; beyond: over-long.
        var far = p
        far.expiryHour = UInt32((now + CarriedPacket.maxExpiryAheadMs) / CarriedPacket.hourMs)
        #expect(errorCode { try far.checkTime(nowMs: now) } == nil)
        far.expiryHour += 1
        #expect(errorCode { try far.checkTime(nowMs: now) } == .malformedPacket)
        #expect(errorCode { _ = try CarriedPacket.decode(far.encode(), nowMs: now) } == .malformedPacket)
        #expect(errorCode { _ = try CarriedPacket.decode(p.encode(), nowMs: p.expiresAtMs + 1) } == .expired)
    }

    @Test func notALinkUnit() throws {
        // Packet.decode (what a link reads) does not take a carried packet: it travels inside
        // link payloads and is read by its own decoder.
        #expect(errorCode { _ = try Packet.decode(try packet().encode()) } == .unknownPacketType)
    }

    @Test func randomInputNeverCrashesAndAcceptedInputIsCanonical() throws {
        var rng = SeededRandom(seed: 18)
        let base = try packet(payload: [1, 2, 3]).encode()
        for i in 0..<20_000 {
            var bytes: [UInt8]
            if i % 2 == 0 {
                bytes = (0..<Int(rng.next() % 80)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            } else {
                bytes = base
                bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            if let p = try? CarriedPacket.decode(bytes) { #expect(p.encode() == bytes) }
            if let r = try? PurgeRecord.decode(bytes) { #expect(r.encode() == bytes) }
        }
    }
}
