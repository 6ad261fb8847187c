import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKNode
@testable import YaOKTransports

/// Issue 18 §2b over a real transport: a stranger who connects to a node's LAN port and
/// completes the handshake (§5.8) gets no byte of the node's identity keys, link key or
/// certificate, and the node shows no contact on that link.
@Suite(.serialized) struct LANStrangerTests {
    private func windows(_ bytes: [UInt8], _ size: Int = 8) -> Set<[UInt8]> {
        guard bytes.count >= size else { return [] }
        return Set((0...(bytes.count - size)).map { Array(bytes[$0..<$0 + size]) })
    }

    @Test func aStrangerWhoConnectsLearnsNoIdentity() throws {
        let pair = try LANPair()
        defer { pair.close() }
        let client = try RawClient(port: pair.aliceLAN.listeningPort ?? 0)
        let handshake = try AnonymousLinkHandshake(role: .initiator)
        let m1 = try #require(try handshake.start())
        client.write([UInt8(m1.count >> 8), UInt8(m1.count & 0xff)] + m1)
        let m2 = client.read(count: 103, timeout: 5)
        #expect(m2.count == 103)
        guard case .handshake(let payload) = try Packet.decode(Array(m2.dropFirst(2))) else {
            Issue.record("m2 is not a handshake packet")
            return
        }
        let (m3, session) = try handshake.receive(payload)
        #expect(session != nil)
        let m3Bytes = try #require(m3)
        client.write([UInt8(m3Bytes.count >> 8), UInt8(m3Bytes.count & 0xff)] + m3Bytes)
        // Everything the node sends within 2 s: its probe, a keepalive, its meeting's first reply.
        let after = client.read(count: 1 << 20, timeout: 2)
        #expect(after.count >= 1055)   // at least the framed probe
        let publicIdentity = try pair.alice.profile().publicIdentity
        let (key, certificate) = pair.alice.state.withLock { ($0.delivery.linkKey, $0.delivery.linkCertificate) }
        let secrets = [publicIdentity.encryptionKey, publicIdentity.signingKey, try #require(key).publicKey,
                       try #require(certificate).bytes, Array(try pair.alice.profile().text.utf8)]
        for value in secrets {
            #expect(windows(m2 + after).isDisjoint(with: windows(value)), "a stranger received 8 bytes of the node's keys, certificate or card")
        }
        let links = pair.alice.state.withLock { s in s.delivery.links.values.filter { $0.link.transport == "lan" && $0.peer == nil && $0.ready } }
        #expect(!links.isEmpty)
        #expect(links.allSatisfy { $0.contactID == nil })
    }
}
