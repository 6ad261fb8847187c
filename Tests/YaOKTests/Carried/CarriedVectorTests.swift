import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The carried-packet vectors of docs/PROTOCOL.md §10, recomputed from their inputs
/// (bindings/python/tests recomputes them with PyNaCl too).
@Suite struct CarriedVectorTests: VectorSuite {
    /// The packet a vector describes, sealed from its inputs, and the content sealed.
    func sealed(_ v: ProtocolVector) throws -> (CarriedPacket, CarriedContent, Identity, Identity) {
        let (sender, recipient) = (try identity(v, "sender"), try identity(v, "recipient"))
        let route = try RoutePair(own: sender, peerKey: recipient.publicIdentity.encryptionKey)
        let kind: CarriedContent.Kind
        if let text = v.fields["body_utf8"] {
            kind = .message(text: Array(text.utf8))
        } else {
            kind = .ack(acknowledged: [try MessageID(bytes: try v.hex("acknowledged"))])
        }
        let content = try CarriedContent(kind: kind, id: MessageID(bytes: try v.hex("message_id")),
                                         createdMs: try v.int64("created_ms"), claim: try v.hex("claim"))
        let packet = try CarriedSeal.seal(content, from: sender, route: route, lifetimeMs: try v.int64("lifetime_ms"),
                                          hopLimit: UInt8(try v.uint64("hop_limit")),
                                          copyBudget: UInt8(try v.uint64("copy_budget")),
                                          ephemeral: try SecureBytes(copying: try v.hex("ephemeral_secret")))
        return (packet, content, sender, recipient)
    }

    @Test(arguments: ["carried-message", "carried-ack"])
    func packets(name: String) throws {
        let v = try vector(name)
        let (packet, content, sender, recipient) = try sealed(v)
        #expect(UInt64(packet.expiryHour) == (try v.uint64("expiry_hour")))
        #expect(packet.routingTag.bytes == (try v.hex("routing_tag")))
        #expect(packet.claimHash == (try v.hex("claim_hash")))
        #expect(content.encode() == (try v.hex("content")))
        #expect(packet.authenticatedHeader == (try v.hex("authenticated")))
        #expect(packet.encode() == (try v.hex("packet")))
        #expect(packet.identity == (try v.hex("identity")))
        // And back: decoded and opened by the recipient.
        let decoded = try CarriedPacket.decode(try v.hex("packet"), nowMs: try v.int64("created_ms"))
        #expect(try CarriedSeal.open(decoded, by: recipient, senderKey: sender.publicIdentity.encryptionKey) == content)
    }

    @Test func tag() throws {
        let v = try vector("carried-tag")
        let (alice, bob) = (try identity(v, "sender"), try identity(v, "recipient"))
        let route = try RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey)
        let epoch = UInt32(try v.uint64("epoch"))
        #expect(route.pairKey.withUnsafeBytes(Array.init) == (try v.hex("pair_key")))
        #expect(route.carriedOutgoingTag(epoch: epoch).bytes == (try v.hex("carried_tag")))
        #expect(route.carriedIncomingTag(epoch: epoch).bytes == (try v.hex("reverse_carried_tag")))
        #expect(try vector("carried-message").hex("routing_tag") == (try v.hex("carried_tag")))
    }

    @Test func purge() throws {
        let v = try vector("carried-purge")
        let claims = try v.string("claims").split(separator: " ").map { try ProtocolVector(fields: ["c": String($0)]).hex("c") }
        let record = try PurgeRecord(claims: claims)
        #expect(record.encode() == (try v.hex("record")))
        #expect(try PurgeRecord.decode(try v.hex("record")) == record)
        for name in ["carried-message", "carried-ack"] {
            let packet = try CarriedPacket.decode(try vector(name).hex("packet"))
            #expect(record.claims.contains { PurgeClaim.purges($0, packet) })
        }
    }

    @Test(arguments: ["carried-reject-budget", "carried-reject-length", "purge-reject-order"])
    func rejects(name: String) throws {
        let v = try vector(name)
        let bytes = try v.hex("bytes")
        let code = name.hasPrefix("purge") ? errorCode { try PurgeRecord.decode(bytes) } : errorCode { try CarriedPacket.decode(bytes) }
        #expect(code.map { "\($0)" } == (try v.string("error")))
    }
}
