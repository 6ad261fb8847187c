import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The checkable claims of docs/PROTOCOL.md §10.8: no identity, key or stable pair value in
/// any carried byte, and the tags of different epochs unlinkable without the pair key.
@Suite struct CarriedPrivacyTests {
    let alice = try! Identity(name: "Alice")
    let bob = try! Identity(name: "Bob")
    let day: Int64 = 86_400_000
    let start: Int64 = 1_700_000_000_000

    var route: RoutePair { try! RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey) }

    /// Everything stable about the pair that could leak: both X25519 and Ed25519 keys, the
    /// pair key, the §4.3 routing tags of those days, the user IDs' bytes.
    func stableValues(days: [Int64]) -> [[UInt8]] {
        var values: [[UInt8]] = [alice.publicIdentity.encryptionKey, bob.publicIdentity.encryptionKey,
                                 alice.publicIdentity.signingKey, bob.publicIdentity.signingKey,
                                 route.pairKey.withUnsafeBytes(Array.init)]
        for d in days {
            values.append(route.outgoingTag(createdMs: d).bytes)
            values.append(route.incomingTag(createdMs: d).bytes)
        }
        return values
    }

    /// The 4-byte windows of `bytes`.
    func windows(_ bytes: [UInt8]) -> Set<[UInt8]> {
        Set((0...(bytes.count - 4)).map { Array(bytes[$0..<($0 + 4)]) })
    }

    @Test func noKeyOrStablePairValueInAnyCarriedByte() throws {
        let times = (0..<10).map { start + Int64($0) * day }
        let stable = stableValues(days: times)
        for t in times {
            for content in [try CarriedContent.message(Array("hi".utf8), createdMs: t),
                            try CarriedContent.ack([.random()], createdMs: t)] {
                let bytes = try CarriedSeal.seal(content, from: alice, route: route).encode()
                for value in stable {
                    // No 4-byte piece of any stable value appears in the packet.
                    #expect(windows(bytes).intersection(windows(value)).count == 0)
                }
                #expect(!contains(bytes, content.id.bytes))
                #expect(!contains(bytes, content.claim))
            }
        }
    }

    @Test func packetsOfOnePairOnDifferentDaysShareNothingBeyondTheFixedBytes() throws {
        // Outside the fixed prefix (version, type) and the header's length fields, and the
        // expiry's high bytes (a date, the same for everyone), two packets of the same pair
        // and text on different days share no 4-byte substring beyond chance: for two
        // ~160-byte random strings, the expected number of shared 4-byte windows is about
        // 160² / 2³² ≈ 6·10⁻⁶.
        let text = Array("same text every day".utf8)
        var seen: [Set<[UInt8]>] = []
        for d in 0..<8 {
            let packet = try CarriedSeal.seal(try .message(text, createdMs: start + Int64(d) * day), from: alice, route: route)
            var bytes = packet.encode()
            bytes.removeSubrange(0..<6)  // version, type, hop limit, budget, expiry's two high bytes
            bytes.removeSubrange(26..<28)  // payload length (was offset 32)
            let mine = windows(bytes)
            for other in seen { #expect(mine.intersection(other).count == 0) }
            seen.append(mine)
        }
    }

    @Test func tagsRotateEveryEpochAndDifferFromTheDirectTags() throws {
        let bobSide = try RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey)
        var tags = Set<RoutingTag>()
        for epoch in UInt32(19_000)..<UInt32(19_100) {
            let tag = route.carriedOutgoingTag(epoch: epoch)
            #expect(bobSide.carriedIncomingTag(epoch: epoch) == tag)
            #expect(route.carriedIncomingTag(epoch: epoch) != tag)
            #expect(route.outgoingTag(day: epoch) != tag)
            tags.insert(tag)
        }
        #expect(tags.count == 100)
        // Without the pair key, a tag of one epoch says nothing of the next: another pair's
        // key gives other tags (a keyed hash, so this is all a test can show).
        let carol = try Identity(name: "Carol")
        let other = try RoutePair(own: carol, peerKey: bob.publicIdentity.encryptionKey)
        #expect(tags.isDisjoint(with: (UInt32(19_000)..<UInt32(19_100)).map { other.carriedOutgoingTag(epoch: $0) }))
    }

    @Test func identityIsNotDerivedFromTheSenderRecipientOrMessageID() throws {
        let content = try CarriedContent.message(Array("x".utf8), createdMs: start)
        let packets = try (0..<20).map { _ in try CarriedSeal.seal(content, from: alice, route: route) }
        #expect(Set(packets.map(\.identity)).count == 20)
        #expect(Set(packets.map(\.claimHash)).count == 1)  // same content, same claim
        let fresh = try (0..<20).map { _ in try CarriedSeal.seal(try .message(Array("x".utf8), createdMs: start),
                                                                 from: alice, route: route) }
        #expect(Set(fresh.map(\.claimHash)).count == 20)
    }
}
