import Testing
@testable import YaOKSupport
@testable import YaOKCrypto
@testable import YaOKNode

/// ReceiverKeyReserve: receiver key pairs made ahead of the drain that mints them. (The
/// reserve is the process's: other suites running beside this one take from it and top it
/// up too, so these tests look at the pairs they took and at the reserve filling again.)
@Suite struct ReceiverKeyReserveTests {
    @Test func pairsMadeAheadAreSoundAndNeverHandedOutTwice() throws {
        while try ReceiverKeyReserve.makeOne() {}
        var publicKeys: Set<[UInt8]> = []
        for id in UInt32(1)...UInt32(ReceiverKeyReserve.capacity + 2) {  // past the reserve: made at once
            let pair = try ReceiverKeyReserve.pair(id: id)
            #expect(pair.key.id == id)
            #expect(try pair.secret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) } == pair.key.publicKey)
            publicKeys.insert(pair.key.publicKey)
        }
        #expect(publicKeys.count == ReceiverKeyReserve.capacity + 2)
    }

    /// A message received mints a key (§13.3 rule 3); the receiver's event thread then makes
    /// the pairs for the next ones.
    @Test func aDrainTopsTheReserveUp() throws {
        let pair = try Pair()
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { pipe.initiator.isAuthenticated && pipe.responder.isAuthenticated })
        ReceiverKeyReserve.removeAll()
        try pair.bob.send(to: pair.aliceID, text: "hello")
        #expect(eventually { ((try? pair.alice.texts(pair.bobID)) ?? []).contains("hello") })
        #expect(eventually { ReceiverKeyReserve.count == ReceiverKeyReserve.capacity })
    }
}
