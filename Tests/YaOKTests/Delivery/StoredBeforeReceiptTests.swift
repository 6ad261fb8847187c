import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// A message's MESSAGE_STORED reaches the app before its receipt's `sent` and its ack's
/// `delivered`, however long the sending thread takes after its group's traffic is released:
/// the group's events are posted first (`Node.writeSendGroup`, `Node.perform`). They were
/// posted after the release and after the flush, and the event thread could meanwhile hand
/// the released units on, drain the receipt and tell `sent` first (review 17b).
@Suite struct StoredBeforeReceiptTests {
    private static let text = "stored first"

    private static func isStored(_ e: NodeEvent) -> Bool {
        if case .messageStored(let m) = e { return m.text == text }
        return false
    }

    private static func isAnswered(_ e: NodeEvent) -> Bool {
        if case .messageStatusChanged(let m) = e { return m.text == text && (m.status == .sent || m.status == .delivered) }
        return false
    }

    @Test func storedComesBeforeSentWhenTheSenderStallsAfterTheRelease() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (alice, bob) = (pair.alice, pair.bob)
        let (pipe, events) = try pair.linkedAfterOneExchange()
        defer { pipe.close() }

        // Once the group's traffic is released, Alice's sending thread stalls while Bob
        // sends: the drain of his message on Alice's event thread flushes what was released,
        // and Bob's receipt comes back, all before the sending thread goes on.
        let first = Locked(true)
        let aliceID = pair.aliceID
        try alice.withStore { _, s in
            s.delivery.sendTrafficReleased = {
                guard first.withLock({ f in defer { f = false }; return f }) else { return }
                _ = try? bob.send(to: aliceID, text: "meanwhile")
                for _ in 0..<400 where !events.all.contains(where: Self.isAnswered) { usleep(5_000) }
            }
        }
        _ = try alice.send(to: pair.bobID, text: Self.text)
        #expect(events.wait(for: Self.isAnswered) != nil)
        let all = events.all
        let stored = try #require(all.firstIndex(where: Self.isStored))
        let answered = try #require(all.firstIndex(where: Self.isAnswered))
        #expect(stored < answered)
    }
}
