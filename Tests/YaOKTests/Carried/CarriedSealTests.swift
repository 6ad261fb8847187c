import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// Sealing and opening carried packets (docs/PROTOCOL.md §10.4), the purge claim (§10.6)
/// and the ack carried back (§10.7).
@Suite struct CarriedSealTests {
    let alice = try! Identity(name: "Alice")
    let bob = try! Identity(name: "Bob")
    let carol = try! Identity(name: "Carol")
    let now: Int64 = 1_700_000_000_000

    var aliceToBob: RoutePair { try! RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey) }
    var bobToAlice: RoutePair { try! RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey) }

    func sealed(_ text: String = "Hello through strangers", id: MessageID = .random()) throws -> (CarriedContent, CarriedPacket) {
        let content = try CarriedContent.message(Array(text.utf8), id: id, createdMs: now)
        return (content, try CarriedSeal.seal(content, from: alice, route: aliceToBob))
    }

    /// As Bob opens what a carrier handed him: decode (with the time), then his contacts' tags.
    func open(_ bytes: [UInt8], nowMs: Int64? = nil) throws -> CarriedContent {
        let packet = try CarriedPacket.decode(bytes, nowMs: nowMs ?? now)
        return try CarriedSeal.open(packet, by: bob, contacts: [carol.publicIdentity.encryptionKey,
                                                                 alice.publicIdentity.encryptionKey]).content
    }

    @Test func messageRoundTrip() throws {
        let (content, packet) = try sealed()
        let bytes = packet.encode()
        // 34 header + 64 envelope + 64 bucket (39 + 23 bytes of content fit in 64).
        #expect(bytes.count == 34 + 64 + 64)
        #expect(try open(bytes) == content)
        let opened = try CarriedSeal.open(packet, by: bob, contacts: [alice.publicIdentity.encryptionKey])
        #expect(opened.senderKey == alice.publicIdentity.encryptionKey)
        #expect(packet.copyBudget == CopyBudget.maximum)
        #expect(HopLimit.initialRange.contains(packet.hopLimit))
        // Nobody else opens it: not Carol (not for her), not Alice (it is to Bob).
        #expect(errorCode { try CarriedSeal.open(packet, by: carol, contacts: [alice.publicIdentity.encryptionKey]) } == .notForMe)
        #expect(errorCode { try CarriedSeal.open(packet, by: carol, senderKey: alice.publicIdentity.encryptionKey) } == .tampered)
    }

    @Test func largestMessageFitsAndPadsToTheBuckets() throws {
        let text = [UInt8](repeating: 0x61, count: Envelope.maxBodyLength)
        let content = try CarriedContent.message(text, createdMs: now)
        let packet = try CarriedSeal.seal(content, from: alice, route: aliceToBob)
        #expect(packet.payload.count == 64 + 16384)
        #expect(packet.encode().count <= Wire.maxPacketLength)
        #expect(try open(packet.encode()) == content)
        #expect(errorCode { try CarriedContent.message(text + [0x61], createdMs: now) } == .messageTooLarge)
        #expect(errorCode { try CarriedContent.message([], createdMs: now) } == .emptyMessage)
        // Sizes: every payload is 64 + a bucket, whatever the text's length.
        for length in [1, 24, 25, 89, 1000, 5000] {
            let p = try CarriedSeal.seal(try .message([UInt8](repeating: 0x62, count: length), createdMs: now),
                                         from: alice, route: aliceToBob)
            #expect(Padding.buckets.contains(p.payload.count - 64))
        }
    }

    @Test func carriersMayChangeHopLimitAndBudgetOnly() throws {
        let (content, packet) = try sealed()
        let bytes = packet.encode()
        var carried = bytes
        carried[2] = 0
        carried[3] = 1
        #expect(try open(carried) == content)
        // The stated status of every other field (PROTOCOL.md §10.2's table).
        func changed(_ offset: Int, _ xor: UInt8 = 0x01) throws -> YaOKError.Code? {
            var b = bytes
            b[offset] ^= xor
            return errorCode { try open(b) }
        }
        #expect(try changed(0) == .unsupportedVersion)
        #expect(try changed(1) == .unknownPacketType)
        // Expiry: an hour off on the same day → tampered; a day earlier → another epoch → not
        // for me; past → expired; 2^31 hours ahead → over-long (the packet lives 14 days, the
        // longest, so a day later would be over-long too).
        let hourInDay = packet.expiryHour % 24
        var sameDay = packet
        sameDay.expiryHour = hourInDay < 23 ? packet.expiryHour + 1 : packet.expiryHour - 1
        #expect(errorCode { try open(sameDay.encode()) } == .tampered)
        var nextDay = packet
        nextDay.expiryHour -= 24
        #expect(errorCode { try open(nextDay.encode()) } == .notForMe)
        #expect(errorCode { try open(bytes, nowMs: packet.expiresAtMs) } == .expired)
        #expect(try changed(4, 0x80) == .malformedPacket)
        for offset in 8..<16 { #expect(try changed(offset) == .notForMe) }
        for offset in 16..<32 { #expect(try changed(offset) == .tampered) }
        #expect(try changed(33) == .malformedPacket)
        for offset in stride(from: 34, to: bytes.count, by: 7) { #expect(try changed(offset) == .tampered) }
        // Length and payload alike: still tampered (bound into the AD).
        var longer = packet
        longer.payload += [0]
        #expect(errorCode { try open(longer.encode()) } == .tampered)
        var short = packet
        short.payload = Array(short.payload.prefix(127))
        #expect(errorCode { try open(short.encode()) } == .malformedEnvelope)
    }

    @Test func reSealingGivesANewIdentity() throws {
        let id = MessageID.random()
        let content = try CarriedContent.message(Array("same".utf8), id: id, createdMs: now)
        let first = try CarriedSeal.seal(content, from: alice, route: aliceToBob)
        let second = try CarriedSeal.seal(content, from: alice, route: aliceToBob)
        #expect(first.identity != second.identity)
        #expect(first.identity.count == 16)
        // Carriers' changes do not change it; any sealed byte does.
        var carried = first
        carried.hopLimit = 0
        carried.copyBudget = 1
        #expect(carried.identity == first.identity)
        var altered = first
        altered.payload[40] ^= 1
        #expect(altered.identity != first.identity)
        // It is not the inner message ID nor derived from the keys.
        #expect(first.identity != id.bytes)
    }

    @Test func theClaimPurgesOnlyItsPacket() throws {
        let (content, packet) = try sealed()
        let (otherContent, other) = try sealed()
        let opened = try open(packet.encode())
        #expect(PurgeClaim.purges(opened.claim, packet))
        #expect(opened.claim == content.claim)
        #expect(!PurgeClaim.purges(opened.claim, other))
        #expect(!PurgeClaim.purges(otherContent.claim.map { $0 ^ 1 }, other))
        #expect(!PurgeClaim.purges([], packet))
        // The claim never appears outside the seal.
        #expect(!contains(packet.encode(), content.claim))
        // Through a purge record, as a carrier receives it.
        let record = try PurgeRecord.decode(try PurgeRecord(claims: [opened.claim]).encode())
        #expect(record.claims.contains { PurgeClaim.purges($0, packet) })
    }

    @Test func aClaimThatIsNotThePreimageIsRefused() throws {
        // A sender that puts a claim hash outside whose preimage is not inside would make a
        // packet nobody can purge: the recipient refuses it.
        let content = try CarriedContent.message(Array("x".utf8), createdMs: now)
        let good = try CarriedSeal.seal(content, from: alice, route: aliceToBob, lifetimeMs: 86_400_000, hopLimit: 8,
                                        copyBudget: 8, ephemeral: try SecureBytes.random(count: 32))
        #expect(try open(good.encode()) == content)
        let lying = try CarriedSeal.seal(content, from: alice, route: aliceToBob, lifetimeMs: 86_400_000, hopLimit: 8,
                                         copyBudget: 8, ephemeral: try SecureBytes.random(count: 32),
                                         claimHash: PurgeClaim.hash(PurgeClaim.random()))
        #expect(errorCode { try open(lying.encode()) } == .malformedEnvelope)
        // A carrier that swaps the claim hash breaks the seal.
        var swapped = good
        swapped.claimHash = PurgeClaim.hash(PurgeClaim.random())
        #expect(errorCode { try open(swapped.encode()) } == .tampered)
    }

    @Test func someoneElsePosingAsTheSenderFailsTheMAC() throws {
        // Carol, given the Alice → Bob route (its tag), seals to Bob naming Alice as sender:
        // the AEAD opens (the AD names Alice, as Bob's does), the static-static MAC does not.
        let content = try CarriedContent.message(Array("from Alice, honest".utf8), createdMs: now)
        let forged = try CarriedSeal.seal(content, from: carol, route: aliceToBob, lifetimeMs: 86_400_000, hopLimit: 8,
                                          copyBudget: 8, ephemeral: try SecureBytes.random(count: 32),
                                          claimedSenderKey: alice.publicIdentity.encryptionKey)
        #expect(errorCode { try open(forged.encode()) } == .senderAuthFailed)
    }

    @Test func ackTravelsBackAsACarriedPacket() throws {
        let (content, packet) = try sealed()
        let opened = try open(packet.encode())
        let ack = try CarriedContent.ack([opened.id], createdMs: now + 60_000)
        let back = try CarriedSeal.seal(ack, from: bob, route: bobToAlice)
        let bytes = back.encode()
        // Padded like a message: an ack of one ID is the size of a short message.
        #expect(bytes.count == packet.encode().count)
        let received = try CarriedSeal.open(try CarriedPacket.decode(bytes, nowMs: now + 60_000), by: alice,
                                            contacts: [bob.publicIdentity.encryptionKey])
        #expect(received.senderKey == bob.publicIdentity.encryptionKey)
        #expect(received.content.kind == .ack(acknowledged: [content.id]))
        // Its tag is the other direction's: Bob does not recognise his own ack as mail to him.
        #expect(errorCode { try CarriedSeal.open(back, by: bob, contacts: [alice.publicIdentity.encryptionKey]) } == .notForMe)
        #expect(errorCode { try CarriedContent.ack([], createdMs: now) } == .invalidArgument)
        let full = try CarriedContent.ack((0..<255).map { _ in .random() }, createdMs: now)
        #expect(try CarriedSeal.open(try CarriedSeal.seal(full, from: bob, route: bobToAlice), by: alice,
                                     senderKey: bob.publicIdentity.encryptionKey) == full)
    }

    @Test func lifetimeAndRouteAreChecked() throws {
        let content = try CarriedContent.message(Array("x".utf8), createdMs: now)
        #expect(errorCode { try CarriedSeal.seal(content, from: alice, route: aliceToBob, lifetimeMs: CarriedPacket.maxLifetimeMs + 1) } == .invalidArgument)
        #expect(errorCode { try CarriedSeal.seal(content, from: bob, route: aliceToBob) } == .invalidArgument)
        let shortLived = try CarriedSeal.seal(content, from: alice, route: aliceToBob, lifetimeMs: 60_000)
        #expect(shortLived.expiresAtMs - now <= CarriedPacket.hourMs)
        #expect(try open(shortLived.encode()) == content)
    }

    @Test func hostileContentInsideAnAuthenticSealIsRefused() throws {
        // Bytes an authentic sender could seal but `encode` never makes: each malformedEnvelope.
        let claim = PurgeClaim.random()
        func inner(_ kind: UInt8, _ rest: [UInt8]) -> [UInt8] {
            [kind] + MessageID.random().bytes + [0, 0, 0, 0, 0, 1] + claim + rest
        }
        let cases: [[UInt8]] = [
            inner(0x03, [1]), inner(0x02, [0]), inner(0x02, [2] + [UInt8](repeating: 0, count: 16)),
            inner(0x02, [1] + [UInt8](repeating: 0, count: 17)), Array(inner(0x01, []).prefix(20)),
        ]
        for bytes in cases {
            #expect(errorCode { try CarriedContent.decode(bytes[...]) } == .malformedEnvelope)
        }
        #expect(try CarriedContent.decode(inner(0x01, [0x41])[...]).kind == .message(text: [0x41]))
    }
}

func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
}
