import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode
@testable import YaOKTransports
@testable import YaOKRelayServer

/// docs/PROTOCOL.md §13 through a real relay (TLS on 127.0.0.1) between two real nodes with
/// the default options (forward secrecy on): the packets Alice posts while Bob is away (what
/// the relay operator stores and could record) open with Bob's keys while in flight, and
/// with none of his state, reopened from his data directory with his PIN, once delivered
/// and settled.
@Suite(.serialized) struct RelayForwardSecrecyTests {
    @Test func recordedRelayedPacketsDoNotOpenAfterDeliveryAndSeizure() throws {
        let relay = try LocalRelay()
        defer { relay.remove() }
        try relay.start()
        let pair = try RelayPair()
        defer { pair.close() }
        let a = try pair.attach(pair.alice, port: relay.port, pin: relay.pin)
        let b = try pair.attach(pair.bob, port: relay.port, pin: relay.pin)
        try waitUntil("both connected") { relayStatus(a) == "Connected" && relayStatus(b) == "Connected" }
        // Nothing left to send: acks a carrier took leave the outbox with a later commit.
        func settled(_ node: Node) -> Bool {
            (try? node.state.withLock { s in
                try s.store!.outboxRows().allSatisfy { s.delivery.takenAcks.contains($0.packetID) }
            }) ?? false
        }
        func exchange(_ from: Node, to contact: Int64, _ text: String) throws {
            let m = try from.send(to: contact, text: text)
            try waitUntil("delivered", timeout: 10) { try from.messageStatus(m.messageID) == .delivered }
            try waitUntil("acks settled", timeout: 10) { settled(pair.alice) && settled(pair.bob) }
        }
        // One message each way: each has heard the other's receiver key.
        try exchange(pair.alice, to: pair.bobID, "hello")
        try exchange(pair.bob, to: pair.aliceID, "hi")
        #expect(try pair.alice.forwardSecrecy(pair.bobID).active)

        // Bob away: the relay stores what Alice posts. Recorded as posted.
        try pair.bob.setTransport("relay", enabled: false)
        var recorded: [[UInt8]] = []
        var ids: [MessageID] = []
        for n in 0..<3 {
            let m = try pair.alice.send(to: pair.bobID, text: "while away \(n)")
            ids.append(m.messageID)
            recorded.append(try #require(try pair.alice.state.withLock { try $0.store!.outboxRow(m.messageID)?.packet }))
        }
        try waitUntil("stored by the relay", timeout: 10) { try ids.allSatisfy { try pair.alice.messageStatus($0) == .sent } }
        let aliceKey = try pair.alice.state.withLock { try #require($0.keys).identity.publicIdentity.encryptionKey }
        func opens(_ packet: [UInt8], by identity: Identity, keys: [ReceiverKeyPair]) throws -> Bool {
            guard case .routed(let header, let payload) = try Packet.decode(packet) else { return false }
            return (try? SealedMessage.openForwardSecret(header, payload: payload, by: identity, matchedSender: aliceKey,
                                                         receiverKeys: keys)) != nil
                || (try? SealedMessage.open(header, payload: payload, by: identity, matchedSender: aliceKey)) != nil
        }
        // In flight, Bob's keys open them (so the check below would see it if they still did).
        let (bobIdentity, inFlight) = try pair.bob.state.withLock { s -> (Identity, [ReceiverKeyPair]) in
            guard let keys = s.keys, let store = s.store else { throw YaOKError(.locked) }
            return (keys.identity, try store.receiverKeyRing(contactID: pair.aliceID, cipher: keys.cipher).openingKeys)
        }
        #expect(try recorded.map { try opens($0, by: bobIdentity, keys: inFlight) } == [true, true, true])

        // Bob back: delivered through the relay; one more exchange each way settles the keys.
        try pair.bob.setTransport("relay", enabled: true)
        try waitUntil("delivered", timeout: 15) { try ids.allSatisfy { try pair.alice.messageStatus($0) == .delivered } }
        try waitUntil("acks settled", timeout: 10) { settled(pair.alice) && settled(pair.bob) }
        try exchange(pair.bob, to: pair.aliceID, "got them")
        try exchange(pair.alice, to: pair.bobID, "good")
        #expect(try pair.bob.texts(pair.aliceID).filter { $0.hasPrefix("while away") }.count == 3)

        // Seizure: Bob's data directory and PIN.
        pair.bob.close()
        var options = Node.Options()
        options.pinHashing = .insecureFastForTestsOnly
        options.allowTestOnlyKDFCosts = true
        let seized = try Node(dataDirectory: pair.dirB, options: options)
        defer { seized.close() }
        try seized.unlock(pin: "246810")
        let (identity, keys) = try seized.state.withLock { s -> (Identity, [ReceiverKeyPair]) in
            guard let keys = s.keys, let store = s.store else { throw YaOKError(.locked) }
            return (keys.identity, try store.receiverKeyRing(contactID: pair.aliceID, cipher: keys.cipher).openingKeys)
        }
        #expect(!keys.isEmpty)
        #expect(try recorded.map { try opens($0, by: identity, keys: keys) } == [false, false, false])
    }
}
