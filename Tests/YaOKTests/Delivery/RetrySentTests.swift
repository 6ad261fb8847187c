import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// `retry` takes a `sent` message (docs/PROTOCOL.md §6.1; include/yaok.h,
/// yaok_message_retry): a relay that stored it may have lost it, and the person's "send
/// again" must not be refused. Only a delivered message is.
@Suite struct RetrySentTests {
    @Test func aSentMessageCanBeRetriedAndADeliveredOneCannot() throws {
        let pair = try Pair()
        defer { pair.close() }
        let relay = MemoryRelay()
        _ = try relay.connect(pair.alice)
        let m = try pair.alice.send(to: pair.bobID, text: "stored, then lost")
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .sent })
        relay.loseEverything()
        #expect(relay.stored == 0)

        let retried = try pair.alice.retry(m.messageID)
        #expect(retried.status == .pending)
        #expect(eventually { relay.stored == 1 && (try? pair.alice.status(of: m.messageID)) == .sent })

        _ = try relay.connect(pair.bob)
        #expect(eventually { (try? pair.alice.status(of: m.messageID)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == ["stored, then lost"])
        #expect(throws: YaOKError(.invalidArgument)) { try pair.alice.retry(m.messageID) }
    }
}
