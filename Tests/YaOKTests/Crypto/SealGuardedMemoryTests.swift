import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// A seal's ephemeral X25519 secret lives in guarded memory for the call only: it borrows a
/// kept region (SecureScratch), wiped after each use, instead of making and freeing one per
/// seal (sodium_malloc and sodium_free: mmap, mprotect, mlock, munlock, munmap each time,
/// about a twentieth of a node's CPU in issue 20's profile).
@Suite struct SealGuardedMemoryTests {
    @Test func sealsMakeNoGuardedRegionOnceWarm() throws {
        let alice = try Identity(name: "Alice"), bob = try Identity(name: "Bob")
        let bobKey = bob.publicIdentity.encryptionKey
        let route = try RoutePair(own: alice, peerKey: bobKey)
        let receiver = try ReceiverKeyPair.generate(id: 7)
        let announce = Announcement(key: try ReceiverKeyPair.generate(id: 3).key, release: 0)
        let now: Int64 = 1_800_000_000_000
        func sealEach() throws {
            _ = try SealedMessage.seal(Array("hello".utf8), from: alice, to: bobKey, createdMs: now, route: route)
            _ = try SealedMessage.sealForwardSecret(Array("hello".utf8), from: alice, receiverKey: receiver.key,
                                                    announce: announce, createdMs: now, route: route)
            _ = try Envelope.seal(Array("hello".utf8), from: alice, to: bobKey, messageID: MessageID.random().bytes,
                                  timestamp: now)
            _ = try CarriedSeal.seal(try .message(Array("hello".utf8), createdMs: now), from: alice, route: route)
            _ = try CarriedSeal.sealForwardSecret(try .message(Array("hello".utf8), createdMs: now), from: alice,
                                                  route: route, receiverKey: receiver.key, announce: announce)
        }
        try sealEach()  // warm: the static-static secret per contact is kept (one region each)
        let rounds = 10
        let (_, allocations) = try SecureBytes.countingAllocations { for _ in 0..<rounds { try sealEach() } }
        // Before: one region per seal, 50 here. Other tests' seals on other threads may hold
        // every kept region at a moment, and then one is made: far fewer than one per seal.
        #expect(allocations < rounds, "guarded regions made by \(5 * rounds) seals: \(allocations)")
    }

    /// The borrowed region holds the secret only during the call: wiped after it, and
    /// a region the call kept a reference to is not handed out again.
    @Test func aBorrowedRegionIsWipedAfterUse() throws {
        var seen: SecureBytes?
        let bytes = try SecureScratch.withRandom(count: 32) { region -> [UInt8] in
            seen = region
            return region.withUnsafeBytes { Array($0) }
        }
        #expect(bytes != [UInt8](repeating: 0, count: 32))
        let kept = try #require(seen)
        #expect(kept.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
        let next = try SecureScratch.withRandom(count: 32) { $0 === kept }
        #expect(!next)
    }
}
