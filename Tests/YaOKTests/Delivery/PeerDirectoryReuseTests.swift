import Testing
@testable import YaOKCrypto
@testable import YaOKNode

/// A change of contacts rebuilds the engine's contact directory; the keys derived for the
/// contacts that stay are reused (each costs four X25519s: deriving them all again made the
/// 200th contact take 40 ms to add), and those of a new contact are right.
@Suite struct PeerDirectoryReuseTests {
    /// Each contact's derived key objects, by contact id: the route key, the ack keys and the
    /// contact link key.
    private func derived(_ node: Node) -> [Int64: [AnyObject]] {
        node.state.withLock { s in
            var out: [Int64: [AnyObject]] = [:]
            for (id, peer) in s.delivery.peers?.byContact ?? [:] {
                let link = s.delivery.contactLinkKeys?.first { $0.peer == peer.identity }
                out[id] = [peer.outgoingAckKey, peer.incomingAckKey] + (link.map { [$0.key] } ?? [])
            }
            return out
        }
    }

    @Test func addingAndDeletingAContactReusesTheOthersKeys() throws {
        let pair = try Pair()
        defer { pair.close() }
        let carol = try Identity(name: "Carol")
        let dave = try Identity(name: "Dave")
        let carolID = try pair.alice.addContact(card: carol.card.text).id
        let before = derived(pair.alice)
        #expect(before.count == 2 && before.values.allSatisfy { $0.count == 3 })

        let daveID = try pair.alice.addContact(card: dave.card.text).id
        var after = derived(pair.alice)
        for (id, objects) in before {
            #expect(zip(objects, after[id] ?? []).allSatisfy { $0 === $1 }, "contact \(id)'s keys were derived again")
        }
        // The new contact's keys are its own: the same values a fresh derivation gives.
        let keys = try #require(after[daveID])
        #expect(keys.count == 3)
        let fresh = try ContactLinkKey(own: try pair.alice.state.withLock { try #require($0.keys).identity },
                                       peer: dave.publicIdentity)
        #expect((keys[2] as? SecureBytes)?.constantTimeEquals(fresh.key) == true)

        try pair.alice.deleteContact(carolID)
        after = derived(pair.alice)
        #expect(after[carolID] == nil)
        #expect(zip(before[pair.bobID] ?? [], after[pair.bobID] ?? []).allSatisfy { $0 === $1 })
        #expect(after.count == 2)
    }
}
