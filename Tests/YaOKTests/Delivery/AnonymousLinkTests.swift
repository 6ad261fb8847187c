import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A peer driven by hand through the crypto layer (docs/PROTOCOL.md §5.8–5.9), against a real
/// `Node`'s link: it records every unit the node sends it, and opens them with its session.
final class HandPeer {
    let link: Link
    let sent = Locked<[[UInt8]]>([])
    private(set) var session: LinkSession?

    /// Runs the anonymous handshake with `node`, the node taking `nodeRole`.
    init(_ node: Node, nodeRole: LinkRole) throws {
        let sent = self.sent
        link = try node.openLink(transport: "test", role: nodeRole, mtu: 65_535,
                                 send: { unit in sent.withLock { $0.append(unit) } })
        if nodeRole == .responder {
            let h = try AnonymousLinkHandshake(role: .initiator)
            link.receive(try #require(try h.start()))
            #expect(eventually { sent.withLock { $0.count } >= 1 })
            let (m3, session) = try h.receive(try handshakePayload(sent.withLock { $0[0] }))
            link.receive(try #require(m3))
            self.session = session
        } else {
            let h = try AnonymousLinkHandshake(role: .responder)
            #expect(eventually { sent.withLock { $0.count } >= 1 })
            let (m2, _) = try h.receive(try handshakePayload(sent.withLock { $0[0] }))
            link.receive(try #require(m2))
            #expect(eventually { sent.withLock { $0.count } >= 2 })
            self.session = try h.receive(try handshakePayload(sent.withLock { $0[1] })).session
        }
        #expect(session != nil)
    }

    var handshakeHash: [UInt8] { session?.handshakeHash ?? [] }

    func send(_ payload: LinkPayload) throws {
        link.receive(try #require(session).seal(payload))
    }

    private var opened: [LinkPayload] = []
    private var unitsSeen = 0

    /// What the node sent after the handshake, opened (each unit once: the session refuses
    /// a replay, so a second call opens only what arrived since).
    func payloads() throws -> [LinkPayload] {
        let units = sent.withLock { $0 }
        for unit in units.dropFirst(unitsSeen) {
            unitsSeen += 1
            if case .link = try Packet.decode(unit) { opened.append(try #require(session).open(unit)) }
        }
        return opened
    }
}

private func windows(_ bytes: [UInt8], _ size: Int = 8) -> Set<[UInt8]> {
    guard bytes.count >= size else { return [] }
    return Set((0...(bytes.count - size)).map { Array(bytes[$0..<$0 + size]) })
}

private func stateOf(_ node: Node, _ link: Link) -> (peer: PublicIdentity?, contact: Int64?, ready: Bool) {
    node.state.withLock { s in
        let l = s.delivery.links[link.id]
        return (l?.peer, l?.contactID, l?.ready ?? false)
    }
}

/// Running nodes link anonymously (issue 18 §2b): a stranger, dialling or dialled, learns no
/// identity, certificate or stable value; only a contact's proof makes a link the contact's.
@Suite struct AnonymousLinkTests {
    /// Everything stable about a node: what a stranger must never receive.
    private func secrets(_ node: Node) throws -> [[UInt8]] {
        let publicIdentity = try node.profile().publicIdentity
        let (key, certificate) = node.state.withLock { ($0.delivery.linkKey, $0.delivery.linkCertificate) }
        return [publicIdentity.encryptionKey, publicIdentity.signingKey, try #require(key).publicKey,
                try #require(certificate).bytes, try node.profile().text.utf8.map { $0 }]
    }

    @Test(arguments: [LinkRole.responder, LinkRole.initiator])
    func aStrangerLearnsNothingStableFromANodeEitherWay(nodeRole: LinkRole) throws {
        let pair = try Pair()   // Alice has a contact (Bob), so her probe carries a real marker
        defer { pair.close() }
        let stable = try secrets(pair.alice)
        var heard: [Set<[UInt8]>] = []
        for _ in 0..<2 {
            let stranger = try HandPeer(pair.alice, nodeRole: nodeRole)
            defer { stranger.link.close() }
            // The stranger's own probe, with a contact of its own in it.
            let own = try ContactLinkKey(own: try Identity(name: "Mallory"), peer: try Identity(name: "Oscar").publicIdentity)
            let probe = ContactRecognition(role: nodeRole == .responder ? .initiator : .responder,
                                           handshakeHash: stranger.handshakeHash, contacts: [own]).probe()
            try stranger.send(.contactProbe(try ContactProbeBody(decoding: probe.dropFirst())))
            #expect(eventually { stranger.link.peerIsContact == false })
            #expect(stranger.link.isAuthenticated)
            let (peer, contact, ready) = stateOf(pair.alice, stranger.link)
            #expect(ready && peer == nil && contact == nil)

            let units = stranger.sent.withLock { $0 }
            let payloads = try stranger.payloads()
            // Its probe, never a proof; nothing routed.
            #expect(payloads.contains { if case .contactProbe = $0 { true } else { false } })
            #expect(!payloads.contains { if case .contactProof = $0 { true } else { false } })
            #expect(!payloads.contains { if case .packet = $0 { true } else { false } })
            var all: Set<[UInt8]> = []
            for bytes in units + (try payloads.map { try $0.encode() }) {
                for value in stable {
                    #expect(windows(bytes).isDisjoint(with: windows(value)), "a stranger received 8 bytes of the node's keys, certificate or card")
                }
            }
            // Across links: the raw units past their headers, and the recognition payloads.
            for unit in units {
                guard let packet = try? Packet.decode(unit) else { continue }
                switch packet {
                case .handshake(let payload): all.formUnion(windows(Array(payload.dropFirst())))
                case .link: all.formUnion(windows(Array(unit.dropFirst(Packet.linkHeaderLength))))
                default: break
                }
            }
            for case .contactProbe(let body) in payloads { all.formUnion(windows(body.bytes)) }
            heard.append(all)
        }
        #expect(heard[0].isDisjoint(with: heard[1]), "two links to the same node share an 8-byte string")
    }

    @Test(arguments: [LinkRole.responder, LinkRole.initiator])
    func twoContactsRecogniseEachOtherOnAnAnonymousLink(aliceRole: LinkRole) throws {
        let pair = try Pair()
        defer { pair.close() }
        let pipe = aliceRole == .initiator ? try MemoryPipe(pair.alice, pair.bob) : try MemoryPipe(pair.bob, pair.alice)
        defer { pipe.close() }
        let aliceLink = aliceRole == .initiator ? pipe.initiator : pipe.responder
        let bobLink = aliceRole == .initiator ? pipe.responder : pipe.initiator
        #expect(eventually { aliceLink.peerIsContact == true && bobLink.peerIsContact == true })
        #expect(stateOf(pair.alice, aliceLink).contact == pair.bobID)
        #expect(stateOf(pair.bob, bobLink).contact == pair.aliceID)
        #expect(eventually { (try? pair.alice.contact(pair.bobID).connection) != .neverConnected })
        let id = try pair.alice.send(to: pair.bobID, text: "over an anonymous link")
        #expect(eventually { (try? pair.bob.texts(pair.aliceID)) == ["over an anonymous link"] })
        #expect(eventually { (try? pair.alice.status(of: id.messageID)) == .delivered })
    }

    /// A stranger's probe that happens to hold a contact's marker (random bits do, 2^-16 per
    /// contact and link) draws a proof the stranger cannot answer. The dialling node must
    /// still start the meeting: it sends the first reconciliation message, and the peer's
    /// meeting begins with it. (It waited for an answer that never came: one link in
    /// 65,536 per contact had no meeting, and the simulator's hash changed between runs.)
    @Test func aFalsePositiveOfTheFilterDoesNotStallTheMeeting() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let alice = try makeNode(dir, name: "Alice")
        defer { alice.close() }
        let bob = try Identity(name: "Bob")
        _ = try alice.addContact(card: bob.card.text)
        let key = try ContactLinkKey(own: bob, peer: try alice.profile().publicIdentity)

        let stranger = try HandPeer(alice, nodeRole: .initiator)
        defer { stranger.link.close() }
        // The filter holds Bob's marker, as a false positive would; the stranger never proves.
        let probe = ContactRecognition(role: .responder, handshakeHash: stranger.handshakeHash, contacts: [key]).probe()
        try stranger.send(.contactProbe(try ContactProbeBody(decoding: probe.dropFirst())))
        let reconciles = { (try? stranger.payloads())?.filter { if case .carry(.reconcile) = $0 { true } else { false } }.count ?? 0 }
        #expect(eventually { reconciles() == 1 })
        let payloads = try stranger.payloads()
        #expect(payloads.contains { if case .contactProof = $0 { true } else { false } }, "the control: Alice did send a proof")
        #expect(stranger.link.peerIsContact != true)
    }

    /// A proof the stranger made up, and a genuine proof of a contact replayed from another
    /// link, make no link a contact's: proofs are bound to the link's handshake hash.
    @Test func forgedAndReplayedProofsDoNotMakeAStrangerAContact() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let alice = try makeNode(dir, name: "Alice")
        defer { alice.close() }
        let bob = try Identity(name: "Bob")
        let bobID = try alice.addContact(card: bob.card.text).id
        let key = try ContactLinkKey(own: bob, peer: try alice.profile().publicIdentity)

        // A made-up proof.
        let forger = try HandPeer(alice, nodeRole: .responder)
        defer { forger.link.close() }
        try forger.send(.contactProof(try ContactProofBody(decoding: Sodium.randomBytes(32)[...])))
        try forger.send(.keepalive)
        #expect(eventually { alice.state.withLock { $0.delivery.links[forger.link.id]?.badUnits ?? 0 } == 1 })
        #expect(stateOf(alice, forger.link).peer == nil && forger.link.peerIsContact != true)

        // A genuine proof on link 1: Bob's (the control: it recognises).
        let first = try HandPeer(alice, nodeRole: .responder)
        defer { first.link.close() }
        let proof = key.mac(ContactRecognition.proofContext, role: .initiator, handshakeHash: first.handshakeHash)
        try first.send(.contactProof(try ContactProofBody(decoding: proof[...])))
        #expect(eventually { first.link.peerIsContact == true })
        #expect(stateOf(alice, first.link).contact == bobID)

        // The same bytes on link 2: refused, the link stays a stranger's.
        let second = try HandPeer(alice, nodeRole: .responder)
        defer { second.link.close() }
        try second.send(.contactProof(try ContactProofBody(decoding: proof[...])))
        try second.send(.keepalive)
        #expect(eventually { alice.state.withLock { $0.delivery.links[second.link.id]?.badUnits ?? 0 } == 1 })
        #expect(stateOf(alice, second.link).peer == nil && second.link.peerIsContact != true)
        // And a routed packet from it is refused (counted), not taken.
        try second.send(.packet(try alice.receiveablePacket(from: bob)))
        #expect(eventually { alice.state.withLock { $0.delivery.links[second.link.id]?.badUnits ?? 0 } == 2 })
        #expect(try alice.texts(bobID).isEmpty)
    }

    /// A locked phone keeps its links: the contact link keys kept from the last unlock still
    /// recognise a contact on a new link, and the contact is matched once unlocked.
    @Test func aLockedNodeStillRecognisesItsContactsOnNewLinks() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.alice.lock()
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { pipe.initiator.peerIsContact == true && pipe.responder.peerIsContact == true })
        #expect(stateOf(pair.alice, pipe.initiator).peer == (try pair.bob.profile().publicIdentity))
        try pair.alice.unlock(pin: testPIN)
        #expect(eventually { stateOf(pair.alice, pipe.initiator).contact == pair.bobID })
    }

    /// §5.8 compatibility: a responder does not answer a §5.2 m1 (it would hand out its link
    /// certificate, and so its identity, to anyone): the link ends with nothing sent.
    @Test func aCertifiedHandshakeGetsNoAnswer() throws {
        let pair = try Pair()
        defer { pair.close() }
        let sent = Locked<[[UInt8]]>([])
        let link = try pair.bob.openLink(transport: "test", role: .responder, mtu: 65_535,
                                         send: { unit in sent.withLock { $0.append(unit) } })
        defer { link.close() }
        let key = try LinkKey()
        let old = try LinkHandshake(role: .initiator, staticKey: key,
                                    certificate: try LinkCertificate(linkPublicKey: key.publicKey, signedBy: try Identity(name: "Old")))
        link.receive(try #require(try old.start()))
        #expect(eventually { pair.bob.state.withLock { $0.delivery.links[link.id] == nil } })
        #expect(sent.withLock { $0.isEmpty })
    }
}

extension Node {
    /// A routed message from `sender` (a contact's identity) sealed to this node.
    func receiveablePacket(from sender: Identity) throws -> [UInt8] {
        let key = try profile().publicIdentity.encryptionKey
        return try SealedMessage.seal(Array("hello".utf8), from: sender, to: key, createdMs: Clock.milliseconds(), messageID: .random()).1
    }
}
