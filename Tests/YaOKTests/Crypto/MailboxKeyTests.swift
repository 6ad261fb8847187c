import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// Relay mailboxes and pseudonyms (docs/PROTOCOL.md §8.2).
@Suite struct MailboxKeyTests {
    let alice = try! Identity(name: "Alice")
    let bob = try! Identity(name: "Bob")
    let eve = try! Identity(name: "Eve")
    let relay = [UInt8](repeating: 0x11, count: 16)

    @Test func bothContactsDeriveTheSameMailboxPerDirection() throws {
        let aliceSide = try RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey)
        let bobSide = try RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey)
        #expect(try aliceSide.outgoingMailbox(relay: relay).publicKey == bobSide.incomingMailbox(relay: relay).publicKey)
        #expect(try bobSide.outgoingMailbox(relay: relay).publicKey == aliceSide.incomingMailbox(relay: relay).publicKey)
        #expect(try aliceSide.outgoingMailbox(relay: relay).publicKey != aliceSide.incomingMailbox(relay: relay).publicKey)
        // A third party's pair with Bob has other mailboxes.
        let eveSide = try RoutePair(own: eve, peerKey: bob.publicIdentity.encryptionKey)
        #expect(try eveSide.outgoingMailbox(relay: relay).publicKey != aliceSide.outgoingMailbox(relay: relay).publicKey)
        // Not the identity keys, nor the routing tags' bytes.
        let mailbox = try aliceSide.outgoingMailbox(relay: relay).publicKey
        #expect(mailbox != bob.publicIdentity.signingKey && mailbox != bob.publicIdentity.encryptionKey)
    }

    /// §8.2: the relay's identifier is in the derivation, so one relay's mailbox IDs are not
    /// another's (an operator cannot fill a pair's mailbox elsewhere, relays comparing notes
    /// cannot match a node's subscriptions), and both contacts still meet at each relay.
    @Test func mailboxesArePerRelay() throws {
        let aliceSide = try RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey)
        let bobSide = try RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey)
        let other = [UInt8](repeating: 0x12, count: 16)
        #expect(try aliceSide.outgoingMailbox(relay: relay).publicKey != aliceSide.outgoingMailbox(relay: other).publicKey)
        #expect(try aliceSide.incomingMailbox(relay: relay).publicKey != aliceSide.incomingMailbox(relay: other).publicKey)
        #expect(try aliceSide.outgoingMailbox(relay: other).publicKey == bobSide.incomingMailbox(relay: other).publicKey)
        // An identifier of the wrong length is refused, not padded or cut.
        #expect(throws: YaOKError.self) { try aliceSide.outgoingMailbox(relay: Array(relay.prefix(15))) }
        #expect(throws: YaOKError.self) { try aliceSide.outgoingMailbox(relay: relay + [0]) }
    }

    @Test func aMailboxKeySignsWhatTheRelayVerifies() throws {
        let key = try RoutePair(own: bob, peerKey: alice.publicIdentity.encryptionKey).incomingMailbox(relay: relay)
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
