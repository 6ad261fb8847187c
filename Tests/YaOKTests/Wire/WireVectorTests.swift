import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The wire vectors of docs/PROTOCOL.md §4, checked against the code both ways.
@Suite struct WireVectorTests: VectorSuite {
    func routedHeader(_ v: ProtocolVector) throws -> RoutedHeader {
        let type = try #require(PacketType(rawValue: try v.hex("type").first ?? 0))
        return try RoutedHeader(type: type, hopLimit: UInt8(try v.uint64("hop_limit")),
                                messageID: MessageID(bytes: try v.hex("message_id")),
                                createdMs: try v.int64("created_ms"),
                                lifetimeMinutes: UInt16(try v.uint64("lifetime_min")),
                                routingTag: RoutingTag(bytes: try v.hex("routing_tag")))
    }

    @Test(arguments: ["wire-routed-message", "wire-routed-ack"])
    func routedPackets(name: String) throws {
        let v = try vector(name)
        let header = try routedHeader(v)
        let payload = try v.hex("payload")
        let packet = try v.hex("packet")
        #expect(try Packet.routed(header, payload: payload).encode() == packet)
        #expect(try Packet.decode(packet) == .routed(header, payload: payload))
        #expect(header.authenticatedBytes(payloadLength: payload.count) == (try v.hex("authenticated")))
        #expect(header.expiresAtMs == (try v.uint64("expires_ms")))
    }

    @Test func routingTag() throws {
        let v = try vector("wire-routing-tag")
        let (alice, bob) = (try identity(v, "sender"), try identity(v, "recipient"))
        let created = try v.int64("created_ms")
        #expect(UInt64(RoutingTag.day(ofMs: created)) == (try v.uint64("day")))
        let aliceSide = try RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey)
        let bobSide = try RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey)
        // Both sides derive the same pair key from their own secret.
        #expect(aliceSide.pairKey.withUnsafeBytes(Array.init) == (try v.hex("pair_key")))
        #expect(bobSide.pairKey.withUnsafeBytes(Array.init) == (try v.hex("pair_key")))
        #expect(aliceSide.outgoingTag(createdMs: created).bytes == (try v.hex("routing_tag")))
        #expect(bobSide.incomingTag(createdMs: created).bytes == (try v.hex("routing_tag")))
        #expect(bobSide.outgoingTag(createdMs: created).bytes == (try v.hex("reverse_routing_tag")))
        #expect(aliceSide.incomingTag(createdMs: created).bytes == (try v.hex("reverse_routing_tag")))
        // The sealed-message vector carries it.
        #expect(try vector("wire-sealed-message").hex("routing_tag") == (try v.hex("routing_tag")))
    }

    @Test func handshake() throws {
        let v = try vector("wire-handshake")
        #expect(try Packet.handshake(payload: try v.hex("payload")).encode() == (try v.hex("packet")))
        #expect(try Packet.decode(try v.hex("packet")) == .handshake(payload: try v.hex("payload")))
    }

    @Test func frame() throws {
        let v = try vector("wire-frame")
        let frame = try v.hex("frame")
        #expect(try Frame.encode(try v.hex("packet")) == frame)
        var decoder = try FrameDecoder()
        #expect(try decoder.feed(frame) == [try v.hex("packet")])
    }

    @Test func fragmentation() throws {
        let v = try vector("wire-fragmentation")
        let packet = try v.hex("packet")
        var fragmenter = try Fragmenter(mtu: Int(try v.uint64("mtu")), firstGroup: UInt16(try v.uint64("group")))
        let units = try fragmenter.split(packet)
        let expected = try (0..<units.count).map { try v.hex("fragment_\($0)") }
        #expect(units == expected)
        #expect(v.fields["fragment_\(units.count)"] == nil)
        var reassembler = try Reassembler()
        var out: [UInt8]?
        for unit in expected.reversed() {
            guard case .fragment(let f) = try Packet.decode(unit) else { Issue.record("not a fragment"); return }
            out = try reassembler.receive(f, nowMs: 0) ?? out
        }
        #expect(out == packet)
    }

    @Test(arguments: ["wire-reject-version", "wire-reject-type", "wire-reject-trailing-byte", "wire-reject-empty"])
    func rejections(name: String) throws {
        let v = try vector(name)
        let expected = try v.string("error")
        let code = errorCode { try Packet.decode(try v.hex("bytes")) }
        #expect(code.map { "\($0)" } == expected)
    }

    @Test func overheadIsWhatTheDocumentSays() {
        // docs/PROTOCOL.md §4.9: 2 + 37 + 64.
        #expect(PacketEnvelope.overhead == 64)
        #expect(WireOverhead.perMessageOnStream == 103)
        #expect(WireOverhead.perMessage(paddedBodyLength: 256, mtu: 1000) == 101)
        #expect(WireOverhead.perMessage(paddedBodyLength: 256, mtu: 241) == 117)
    }
}
