import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// Relay mailboxes and pseudonyms (docs/PROTOCOL.md §8.2).
@Suite struct MailboxKeyTests {
    let alice = try! Identity(name: "Alice")
    let bob = try! Identity(name: "Bob")
    let eve = try! Identity(name: "Eve")

    @Test func bothContactsDeriveTheSameMailboxPerDirection() throws {
        let aliceSide = try RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey)
        let bobSide = try RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey)
        #expect(try aliceSide.outgoingMailbox().publicKey == bobSide.incomingMailbox().publicKey)
        #expect(try bobSide.outgoingMailbox().publicKey == aliceSide.incomingMailbox().publicKey)
        #expect(try aliceSide.outgoingMailbox().publicKey != aliceSide.incomingMailbox().publicKey)
        // A third party's pair with Bob has other mailboxes.
        let eveSide = try RoutePair(own: eve, peerKey: bob.publicIdentity.encryptionKey)
        #expect(try eveSide.outgoingMailbox().publicKey != aliceSide.outgoingMailbox().publicKey)
        // Not the identity keys, nor the routing tags' bytes.
        let mailbox = try aliceSide.outgoingMailbox().publicKey
        #expect(mailbox != bob.publicIdentity.signingKey && mailbox != bob.publicIdentity.encryptionKey)
    }

    @Test func aMailboxKeySignsWhatTheRelayVerifies() throws {
        let key = try RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey).incomingMailbox()
        let message = RelaySignedData.subscribe(nonce: [UInt8](repeating: 1, count: 32),
                                                binding: [UInt8](repeating: 2, count: 32), pseudonym: [UInt8](repeating: 3, count: 32))
        let signature = key.sign(message)
        #expect(SigningKey.verify(signature: signature, message: message, publicKey: key.publicKey))
        #expect(!SigningKey.verify(signature: signature, message: message + [0], publicKey: key.publicKey))
        #expect(!SigningKey.verify(signature: signature, message: message, publicKey: try SigningKey.random().publicKey))
    }

    @Test func aPseudonymSurvivesItsSeed() throws {
        let key = try SigningKey.random()
        let again = try SigningKey(seed: key.seed())
        #expect(again.publicKey == key.publicKey)
        #expect(try SigningKey.random().publicKey != key.publicKey)
        #expect(throws: YaOKError.self) { try SigningKey(seed: SecureBytes(count: 31)) }
    }
}
