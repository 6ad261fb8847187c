import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A link's peer is a contact only if both its keys are that contact's (issue 8 §3,
/// docs/PROTOCOL.md §5.1): a certificate that pairs Alice's X25519 key with Mallory's own
/// Ed25519 key is valid, but Mallory's link must not count as Alice's.
@Suite struct LinkPeerMatchTests {
    @Test func aCertificateBorrowingAContactsEncryptionKeyIsNotThatContact() throws {
        let pair = try Pair()
        defer { pair.close() }
        let mallory = try Identity(name: "Mallory")
        let linkKey = try LinkKey()
        let aliceX = try pair.alice.profile().publicIdentity.encryptionKey
        let signed = LinkCertificate.signedBytes(linkPublicKey: linkKey.publicKey, identityKey: aliceX)
        let forged = try LinkCertificate(decoding: aliceX + mallory.publicIdentity.signingKey + mallory.sign(signed))
        #expect(forged.certifies(linkPublicKey: linkKey.publicKey))

        let sent = Locked<[[UInt8]]>([])
        let link = try pair.bob.openLink(transport: "test", role: .responder, mtu: 65_535,
                                         send: { unit in sent.withLock { $0.append(unit) } })
        defer { link.close() }
        let initiator = try LinkHandshake(role: .initiator, staticKey: linkKey, certificate: forged)
        link.receive(try #require(try initiator.start()))
        #expect(eventually { sent.withLock { $0.count } >= 1 })
        let m3 = try initiator.receive(try handshakePayload(sent.withLock { $0[0] }))
        #expect(m3.completion != nil)
        link.receive(try #require(m3.packet))
        #expect(eventually { pair.bob.state.withLock { $0.delivery.links[link.id]?.peer != nil } })
        let (peer, contact) = pair.bob.state.withLock { s in (s.delivery.links[link.id]?.peer, s.delivery.links[link.id]?.contactID) }
        #expect(peer == forged.identity)
        #expect(contact == nil)
        #expect(try pair.bob.contact(pair.aliceID).connection == .neverConnected)
    }
}
