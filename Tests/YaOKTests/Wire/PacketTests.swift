import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct PacketTests {
    @Test func routedPacketLayoutIsFixed() throws {
        let header = try sampleHeader()
        let bytes = try Packet.routed(header, payload: [0xaa, 0xbb]).encode()
        #expect(bytes.count == RoutedHeader.length + 2)
        #expect(Array(bytes[0..<3]) == [1, 1, 7])
        #expect(Array(bytes[3..<19]) == header.messageID.bytes)
        #expect(Array(bytes[35..<39]) == [0, 2, 0xaa, 0xbb])
        #expect(try Packet.decode(bytes) == .routed(header, payload: [0xaa, 0xbb]))
        let (parsed, range) = try RoutedHeader.parse(bytes)
        #expect(parsed == header)
        #expect(Array(bytes[range]) == [0xaa, 0xbb])
    }

    @Test func authenticatedBytesAreTheHeaderWithoutHopLimit() throws {
        let header = try sampleHeader(hop: 9)
        let bytes = try Packet.routed(header, payload: [1, 2, 3]).encode()
        let ad = header.authenticatedBytes(payloadLength: 3)
        #expect(ad == Array(bytes[0..<2]) + Array(bytes[3..<RoutedHeader.length]))
        var other = header
        other.hopLimit = 1
        #expect(other.authenticatedBytes(payloadLength: 3) == ad)
        other.lifetimeMinutes = 1
        #expect(other.authenticatedBytes(payloadLength: 3) != ad)
    }

    @Test func unknownVersionAndTypeAreRejectedNotMisread() throws {
        var bytes = try Packet.routed(try sampleHeader(), payload: [1]).encode()
        for version: UInt8 in [0, 2, 0xff] {
            bytes[0] = version
            #expect(errorCode { try Packet.decode(bytes) } == .unsupportedVersion)
        }
        bytes[0] = 1
        for type: UInt8 in [0, 6, 0x81, 0xff] {
            bytes[1] = type
            #expect(errorCode { try Packet.decode(bytes) } == .unknownPacketType)
        }
        // The version is judged first even when nothing else follows.
        #expect(errorCode { try Packet.decode([2]) } == .unsupportedVersion)
        #expect(errorCode { try Packet.decode([1, 9]) } == .unknownPacketType)
    }

    /// §4.1's order: the version before anything else, then the type, and only then the
    /// 17,408-byte limit, so a longer packet of a future version (or of an unknown type) is
    /// reported as what it is, not as malformed.
    @Test func theVersionAndTypeAreCheckedBeforeTheSizeLimit() throws {
        var big = [UInt8](repeating: 0, count: Wire.maxPacketLength + 1)
        big[0] = 2
        #expect(errorCode { try Packet.decode(big) } == .unsupportedVersion)
        #expect(errorCode { try RoutedHeader.parse(big) } == .unsupportedVersion)
        big[0] = 1
        big[1] = 9
        #expect(errorCode { try Packet.decode(big) } == .unknownPacketType)
        big[1] = PacketType.handshake.rawValue
        #expect(errorCode { try Packet.decode(big) } == .malformedPacket)
    }

    @Test func everyTruncationIsMalformed() throws {
        let packets: [Packet] = [
            .routed(try sampleHeader(), payload: [1, 2, 3]),
            .routed(try sampleHeader(type: .ack), payload: []),
            .handshake(payload: [4, 5]),
            .fragment(try Fragment(group: 3, index: 1, count: 2, data: [6, 7])),
            .link(counter: 0x0102_0304_0506_0708, ciphertext: [UInt8](repeating: 9, count: Packet.minLinkCiphertextLength)),
        ]
        for packet in packets {
            let bytes = try packet.encode()
            #expect(try Packet.decode(bytes) == packet)
            for n in 0..<bytes.count {
                // A fragment's data runs to the end, so a shorter one with data left is valid.
                if packet.type == .fragment && n > Fragment.headerLength { continue }
                #expect(errorCode { try Packet.decode(Array(bytes[0..<n])) } == .malformedPacket, "length \(n)")
            }
        }
    }

    @Test func trailingBytesAndLyingLengthsAreMalformed() throws {
        let bytes = try Packet.routed(try sampleHeader(), payload: [1, 2]).encode()
        #expect(errorCode { try Packet.decode(bytes + [0]) } == .malformedPacket)
        var lying = bytes
        lying[36] = 0xff  // claims 255 payload bytes, has 2
        #expect(errorCode { try Packet.decode(lying) } == .malformedPacket)
        lying[35] = 0xff  // claims 65535: over the packet limit
        #expect(errorCode { try RoutedHeader.parse(lying) } == .malformedPacket)
        var zeroLifetime = bytes
        zeroLifetime[25] = 0
        zeroLifetime[26] = 0
        #expect(errorCode { try Packet.decode(zeroLifetime) } == .malformedPacket)
        #expect(errorCode { try Packet.decode([1, 3, 0, 1]) } == .malformedPacket)  // handshake short
        #expect(errorCode { try Packet.decode([UInt8](repeating: 1, count: Wire.maxPacketLength + 1)) } == .malformedPacket)
    }

    @Test func malformedMessagesNameTheField() throws {
        do {
            _ = try Packet.decode([1, 1, 7, 0, 0])
            Issue.record("decoded a truncated packet")
        } catch let error as YaOKError {
            #expect(error.message.contains("message ID"))
        }
    }

    @Test func fragmentFieldsAreChecked() {
        #expect(errorCode { try Packet.decode([1, 4, 0, 1, 0, 0, 0, 1, 9]) } == .malformedPacket)  // count 1
        #expect(errorCode { try Packet.decode([1, 4, 0, 1, 0, 2, 0, 2, 9]) } == .malformedPacket)  // index = count
        #expect(errorCode { try Packet.decode([1, 4, 0, 1, 0, 0, 0, 2]) } == .malformedPacket)  // no data
    }

    @Test func linkPacketLayoutAndLimits() throws {
        let ciphertext = [UInt8](repeating: 0xab, count: 20)
        let bytes = try Packet.link(counter: 0x0102_0304_0506_0708, ciphertext: ciphertext).encode()
        #expect(bytes == [1, 5, 0, 28, 1, 2, 3, 4, 5, 6, 7, 8] + ciphertext)
        #expect(try Packet.linkHeader(counter: 0x0102_0304_0506_0708, ciphertextLength: 20) == Array(bytes[0..<12]))
        #expect(Packet.link(counter: 0, ciphertext: []).type == .link)
        #expect(!PacketType.link.isRouted)
        // Shorter than a kind byte and a tag: nothing a link could have sent.
        let short = try Packet.link(counter: 1, ciphertext: [UInt8](repeating: 0, count: Packet.minLinkCiphertextLength)).encode()
        var lying = short
        lying.removeLast()
        lying[3] -= 1
        #expect(errorCode { try Packet.decode(lying) } == .malformedPacket)
        #expect(errorCode { try Packet.link(counter: 1, ciphertext: [0]).encode() } == .malformedPacket)
        #expect(errorCode { try Packet.decode(short + [0]) } == .malformedPacket)  // trailing byte
        let max = [UInt8](repeating: 0, count: Wire.maxPacketLength - Packet.linkHeaderLength)
        #expect(try Packet.link(counter: .max, ciphertext: max).encode().count == Wire.maxPacketLength)
        #expect(errorCode { try Packet.link(counter: 0, ciphertext: max + [0]).encode() } == .malformedPacket)
    }

    @Test func payloadsOverTheLimitCannotBeEncoded() throws {
        let big = [UInt8](repeating: 0, count: Wire.maxPacketLength - RoutedHeader.length + 1)
        #expect(errorCode { try Packet.routed(try sampleHeader(), payload: big).encode() } == .malformedPacket)
        let max = [UInt8](repeating: 0, count: Wire.maxPacketLength - RoutedHeader.length)
        #expect(try Packet.routed(try sampleHeader(), payload: max).encode().count == Wire.maxPacketLength)
    }

    @Test func headerRefusesUnencodableValues() {
        #expect(errorCode { try RoutedHeader(type: .handshake, hopLimit: 1, messageID: .random(), createdMs: 0,
                                             lifetimeMinutes: 1, routingTag: RoutingTag(value: 0)) } == .invalidArgument)
        #expect(errorCode { try RoutedHeader(type: .message, hopLimit: 1, messageID: .random(), createdMs: 1 << 48,
                                             lifetimeMinutes: 1, routingTag: RoutingTag(value: 0)) } == .invalidArgument)
        #expect(errorCode { try RoutedHeader(type: .message, hopLimit: 1, messageID: .random(), createdMs: 0,
                                             lifetimeMinutes: 0, routingTag: RoutingTag(value: 0)) } == .invalidArgument)
    }

    @Test func timeChecks() throws {
        let header = try sampleHeader()  // created 1_700_000_000_000, lifetime 7 days
        #expect(throws: Never.self) { try header.checkTime(nowMs: header.createdMs) }
        #expect(errorCode { try header.checkTime(nowMs: header.expiresAtMs) } == .expired)
        #expect(throws: Never.self) { try header.checkTime(nowMs: header.createdMs - HopLimit.defaultMaxClockSkewMs) }
        #expect(errorCode { try header.checkTime(nowMs: header.createdMs - HopLimit.defaultMaxClockSkewMs - 1) } == .expired)
        #expect(errorCode { try header.checkTime(nowMs: 0) } == .expired)
    }

    @Test func messageIDsAreRandomAndRoundTrip() throws {
        let a = MessageID.random(), b = MessageID.random()
        #expect(a != b)
        #expect(try MessageID(bytes: a.bytes) == a)
        #expect(errorCode { try MessageID(bytes: [1, 2]) } == .invalidArgument)
    }
}
