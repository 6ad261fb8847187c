import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Two nodes in one process over the link API: send, receipt, acknowledgement, statuses.
@Suite struct DeliveryTests {
    @Test func messageIsDeliveredAndAcknowledged() throws {
        let pair = try Pair()
        defer { pair.close() }
        let received = EventRecorder()
        received.attach(to: pair.bob)
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        let m = try pair.alice.send(to: pair.bobID, text: "Hello Bob 👋\nsecond line")
        #expect(m.status == .pending)
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == ["Hello Bob 👋\nsecond line"])
        let event = received.wait { if case .messageReceived = $0 { return true } else { return false } }
        #expect(event == .messageReceived(contactID: pair.aliceID, messageID: m.messageID))
        #expect(try pair.alice.outbox().isEmpty)
    }

    @Test func waitsForATransportThenGoesInOrder() throws {
        let pair = try Pair()
        defer { pair.close() }
        let ids = try (1...10).map { try pair.alice.send(to: pair.bobID, text: "message \($0)").messageID }
        let waiting = try pair.alice.outbox()
        #expect(waiting.count == 10)
        #expect(waiting.allSatisfy { $0.waitingForTransport && $0.status == .pending })
        #expect(waiting.first?.json.serialized.contains("Will send when connected") == true)
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { ids.allSatisfy { (try? pair.alice.status(of: $0)) == .delivered } })
        #expect(try pair.bob.texts(pair.aliceID) == (1...10).map { "message \($0)" })
    }

    @Test func fragmentsOnASmallMTU() throws {
        let pair = try Pair()
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob, mtu: 20)
        defer { pipe.close() }
        let text = String(repeating: "x", count: 10 * 1024)
        let m = try pair.alice.send(to: pair.bobID, text: text)
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == [text])
    }

    @Test func refusesEmptyAndOversizedText() throws {
        let pair = try Pair()
        defer { pair.close() }
        #expect(throws: YaOKError(.emptyMessage)) { try pair.alice.send(to: pair.bobID, text: " \n\t ") }
        #expect(errorMessage { _ = try pair.alice.send(to: pair.bobID, text: String(repeating: "a", count: 10 * 1024 + 1)) }
                == "Message too large (max 10KB)")
        #expect(throws: YaOKError(.notFound)) { try pair.alice.send(to: 999, text: "hi") }
    }

    @Test func strangerCannotDeliverAsAContact() throws {
        let pair = try Pair()
        defer { pair.close() }
        let dirE = TempDir()
        defer { dirE.remove() }
        let eve = try makeNode(dirE, name: "Eve")
        defer { eve.close() }
        _ = try eve.addContact(card: pair.bob.profile().text)
        let events = EventRecorder()
        events.attach(to: pair.bob)
        let pipe = try MemoryPipe(eve, pair.bob)
        defer { pipe.close() }
        let bobInEve = try eve.contacts()[0].id
        let sent = try eve.send(to: bobInEve, text: "I am Alice")
        // Bob does not hold Eve's card: neither recognises the other (§5.9), so the link is a
        // stranger link and Eve's message never goes on it; it stays on Eve's side.
        #expect(eventually { pipe.initiator.peerIsContact == false && pipe.responder.peerIsContact == false })
        usleep(200_000)
        #expect(eve.inflightCount == 0)
        #expect(try eve.outgoingMessage(sent.messageID).status == .pending)
        #expect(events.all.allSatisfy { if case .security = $0 { false } else { true } })
        #expect(try pair.bob.texts(pair.aliceID).isEmpty)
    }
}

@Suite struct ContactCardReadBackTests {
    @Test func cardIsReadBackFromTheStore() throws {
        let pair = try Pair()
        defer { pair.close() }
        let card = try pair.alice.contactCard(pair.bobID)
        #expect(card == (try pair.bob.profile().text))
        #expect(try ContactCard(text: card).publicIdentity == (try pair.alice.contact(pair.bobID).publicIdentity))
        #expect(throws: YaOKError(.notFound)) { try pair.alice.contactCard(4242) }
    }
}
