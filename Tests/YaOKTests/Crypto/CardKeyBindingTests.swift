import Testing
import CSodium
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// A card proves that its owner holds the X25519 key it carries (issue 8 §3): a validly
/// signed card can no longer pair someone else's encryption key with the signer's own
/// signing key. docs/PROTOCOL.md §2.
@Suite struct CardKeyBindingTests {
    let alice = try! Identity(name: "Alice")
    let mallory = try! Identity(name: "Mallory")

    @Test func aCardCannotCarryAnotherPersonsEncryptionKey() throws {
        // Mallory's card with Alice's X25519 key and Mallory's Ed25519 key, signed by Mallory.
        let borrowed = try PublicIdentity(encryptionKey: alice.publicIdentity.encryptionKey,
                                          signingKey: mallory.publicIdentity.signingKey)
        // With Alice's own proof (it binds Alice's Ed25519 key, not Mallory's) …
        #expect(throws: YaOKError(.invalidCard)) {
            try ContactCard(payload: CardForge.payload(mallory, name: "Alice", keys: borrowed, keyProof: alice.keyProof))
        }
        // … with a proof Mallory makes with her own X25519 key …
        let malloryProof = try mallory.encryptionSecret.withUnsafeBytes {
            try XEdDSA.sign(ContactCard.keyProofMessage(borrowed), x25519Secret: $0)
        }
        #expect(throws: YaOKError(.invalidCard)) {
            try ContactCard(payload: CardForge.payload(mallory, name: "Alice", keys: borrowed, keyProof: malloryProof))
        }
        // … or with none at all.
        #expect(throws: YaOKError(.invalidCard)) {
            try ContactCard(payload: CardForge.payload(mallory, name: "Alice", keys: borrowed, keyProof: [UInt8](repeating: 0, count: 64)))
        }
        // The genuine card decodes.
        #expect(try ContactCard(payload: CardForge.payload(mallory, name: "Mallory")).publicIdentity == mallory.publicIdentity)
    }

    @Test func theProofCoversBothKeys() throws {
        // A proof by Alice's X25519 key over another Ed25519 key does not prove this pairing.
        let other = try PublicIdentity(encryptionKey: alice.publicIdentity.encryptionKey,
                                       signingKey: mallory.publicIdentity.signingKey)
        let proofForOther = try alice.encryptionSecret.withUnsafeBytes {
            try XEdDSA.sign(ContactCard.keyProofMessage(other), x25519Secret: $0)
        }
        #expect(throws: YaOKError(.invalidCard)) {
            try ContactCard(payload: CardForge.payload(alice, name: "Alice", keyProof: proofForOther))
        }
        let message = ContactCard.keyProofMessage(alice.publicIdentity)
        #expect(XEdDSA.verify(alice.keyProof, message: message, x25519Public: alice.publicIdentity.encryptionKey))
        #expect(!XEdDSA.verify(alice.keyProof, message: message, x25519Public: mallory.publicIdentity.encryptionKey))
        #expect(!XEdDSA.verify(alice.keyProof, message: message + [0], x25519Public: alice.publicIdentity.encryptionKey))
    }

    /// The seven encodings libsodium's X25519 blocks (points of order 1, 2, 4 and 8 and
    /// their non-canonical forms): every X25519 output with them is zero.
    static let lowOrderKeys: [[UInt8]] = [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    ].map { Hex.decode($0)! }

    @Test(arguments: lowOrderKeys)
    func aCardWithALowOrderEncryptionKeyIsInvalid(key: [UInt8]) throws {
        let keys = try PublicIdentity(encryptionKey: key, signingKey: mallory.publicIdentity.signingKey)
        #expect(keys.hasLowOrderEncryptionKey)
        #expect(throws: YaOKError(.invalidCard)) {
            try ContactCard(payload: CardForge.payload(mallory, name: "Mallory", keys: keys))
        }
    }

    @Test func realKeysAreNotOfLowOrder() throws {
        #expect(!alice.publicIdentity.hasLowOrderEncryptionKey)
        #expect(!mallory.publicIdentity.hasLowOrderEncryptionKey)
    }

    /// XEdDSA's Montgomery-to-Edwards conversion agrees with libsodium's Edwards-to-Montgomery
    /// one, and the proof is an ordinary Ed25519 signature under the converted key.
    @Test func edwardsFormOfTheEncryptionKeyMapsBack() throws {
        for _ in 0..<32 {
            let id = try Identity(name: "Someone")
            let x = id.publicIdentity.encryptionKey
            let edwards = try #require(XEdDSA.edwardsKey(x25519Public: x))
            #expect(edwards[31] & 0x80 == 0)
            var back = [UInt8](repeating: 0, count: 32)
            #expect(crypto_sign_ed25519_pk_to_curve25519(&back, edwards) == 0)
            #expect(back == x)
            #expect(Sodium.verify(signature: id.keyProof, message: ContactCard.keyProofMessage(id.publicIdentity),
                                  publicKey: edwards))
        }
    }

    @Test func nonCanonicalKeysHaveNoEdwardsForm() {
        var p = [UInt8](repeating: 0xFF, count: 32)
        p[0] = 0xED
        p[31] = 0x7F  // p itself
        #expect(XEdDSA.edwardsKey(x25519Public: p) == nil)
        var belowP = p
        belowP[0] = 0xEB  // p − 2
        #expect(XEdDSA.edwardsKey(x25519Public: belowP) != nil)
        var topBit = [UInt8](repeating: 0, count: 32)
        topBit[0] = 9
        topBit[31] = 0x80
        #expect(XEdDSA.edwardsKey(x25519Public: topBit) == nil)
        #expect(XEdDSA.edwardsKey(x25519Public: [UInt8](repeating: 0, count: 31)) == nil)
        var minusOne = p
        minusOne[0] = 0xEC  // u = −1: u + 1 = 0
        #expect(XEdDSA.edwardsKey(x25519Public: minusOne) == nil)
    }
}
