import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// Routing tags only the two contacts can compute (docs/PROTOCOL.md §4.3, issue 8 §4).
@Suite struct RoutingTagTests {
    let alice = try! Identity(name: "Alice")
    let bob = try! Identity(name: "Bob")
    let eve = try! Identity(name: "Eve")
    let day: UInt32 = 19_675

    var aliceKey: [UInt8] { alice.publicIdentity.encryptionKey }
    var bobKey: [UInt8] { bob.publicIdentity.encryptionKey }

    var tag: RoutingTag { try! RoutePair(own: alice, peerKey: bobKey).outgoingTag(day: day) }

    @Test func bothContactsComputeTheSameTagEachWay() throws {
        let aliceSide = try RoutePair(own: alice, peerKey: bobKey)
        let bobSide = try RoutePair(own: bob, peerKey: aliceKey)
        #expect(aliceSide.outgoingTag(day: day) == bobSide.incomingTag(day: day))
        #expect(bobSide.outgoingTag(day: day) == aliceSide.incomingTag(day: day))
        // The direction and the day are bound in.
        #expect(aliceSide.outgoingTag(day: day) != aliceSide.incomingTag(day: day))
        #expect(aliceSide.outgoingTag(day: day) != aliceSide.outgoingTag(day: day + 1))
    }

    /// Everything an outsider holding both cards could compute from the public keys alone —
    /// version 1's tag, and the same construction with a key made of public bytes — differs
    /// from the tag. (No API computes a tag without an identity's secret key: `RoutePair`
    /// is the only way to one, and it takes an `Identity`.)
    @Test func noPublicKeyOnlyDerivationGivesTheTag() throws {
        var dayBytes: [UInt8] = []
        dayBytes.appendBigEndian(UInt64(day), count: 4)
        let route = Array("YaOK-route-v2".utf8)
        let publicPairKeys = [
            Sodium.blake2b([UInt8](), key: route, outputLength: 32),
            Sodium.blake2b(aliceKey + bobKey, key: route, outputLength: 32),
            Sodium.blake2b(bobKey + aliceKey, key: route, outputLength: 32),
            Sodium.blake2b(aliceKey + bobKey, outputLength: 32),
            aliceKey, bobKey,
        ]
        var candidates = [
            Sodium.blake2b(bobKey + dayBytes, key: Array("YaOK-route-v1".utf8), outputLength: 8),  // version 1
            Sodium.blake2b(aliceKey + bobKey + dayBytes, key: route, outputLength: 8),
            Sodium.blake2b(bobKey + dayBytes, key: route, outputLength: 8),
            Sodium.blake2b(aliceKey + bobKey + dayBytes, outputLength: 8),
        ]
        for key in publicPairKeys {
            candidates.append(Sodium.blake2b(aliceKey + bobKey + dayBytes, key: key, outputLength: 8))
        }
        for candidate in candidates { #expect(candidate != tag.bytes) }
    }

    /// Eve, a third identity holding both cards, computes her own pair keys with Alice and
    /// with Bob: no tag of hers matches Alice → Bob, so she cannot recognise their packets.
    @Test func aThirdIdentityCannotComputeOrRecogniseTheTag() throws {
        for peer in [aliceKey, bobKey] {
            let eveSide = try RoutePair(own: eve, peerKey: peer)
            for d in (day - 1)...(day + 1) {
                #expect(eveSide.incomingTag(day: d) != tag)
                #expect(eveSide.outgoingTag(day: d) != tag)
                // Even with Alice and Bob's keys put in the tag's input, under her own pair key.
                #expect(RoutingTag.derive(route: eveSide, senderKey: aliceKey, recipientKey: bobKey, day: d) != tag)
            }
        }
    }

    @Test func aLowOrderPeerKeyIsRefused() {
        #expect(throws: YaOKError(.invalidArgument)) { try RoutePair(own: alice, peerKey: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: YaOKError(.invalidArgument)) { try RoutePair(own: alice, peerKey: [1, 2, 3]) }
    }
}
