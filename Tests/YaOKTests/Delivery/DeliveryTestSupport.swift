import Testing
import Foundation
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Two set-up nodes that have each other as contacts.
struct Pair {
    let dirA = TempDir(), dirB = TempDir()
    let alice: Node, bob: Node
    let bobID: Int64, aliceID: Int64   // contact ids: Bob in Alice's node, Alice in Bob's

    init(clock: TestClock? = nil) throws {
        alice = try makeNode(dirA, name: "Alice", clock: clock)
        bob = try makeNode(dirB, name: "Bob", clock: clock)
        bobID = try alice.addContact(card: bob.profile().text).id
        aliceID = try bob.addContact(card: alice.profile().text).id
    }

    /// A pair on a test clock, what Alice's node tells the app recorded from the start. The
    /// caller closes the pair.
    static func onTestClock() throws -> (pair: Pair, clock: TestClock, aliceEvents: EventRecorder) {
        let clock = TestClock()
        let pair = try Pair(clock: clock)
        let events = EventRecorder()
        events.attach(to: pair.alice)
        return (pair, clock, events)
    }

    func close() {
        alice.close()
        bob.close()
        dirA.remove()
        dirB.remove()
    }

    /// Links the two over a memory link, records what Alice's node tells the app from then
    /// on, and sends Bob one message, returning once Alice was told it is `delivered` (the
    /// link up, keys announced and rings settled). The caller closes the pipe.
    func linkedAfterOneExchange() throws -> (pipe: MemoryPipe, aliceEvents: EventRecorder) {
        let pipe = try MemoryPipe(alice, bob)
        let events = EventRecorder()
        events.attach(to: alice)
        let first = try alice.send(to: bobID, text: "warm-up").messageID
        #expect(events.wait(for: {
            if case .messageStatusChanged(let m) = $0 { m.messageID == first && m.status == .delivered } else { false }
        }) != nil)
        return (pipe, events)
    }

    /// Locks Bob, links the two and sends him `text`: the link took it (Alice sees `sent`)
    /// and Bob holds it, for his unlock to open and acknowledge. The caller closes the pipe.
    func sendWhileBobIsLocked(_ text: String) throws -> (pipe: MemoryPipe, sent: MessageID) {
        try bob.lock()
        let pipe = try MemoryPipe(alice, bob)
        let m = try alice.send(to: bobID, text: text)
        #expect(eventually { (try? alice.status(of: m.messageID)) == .sent })
        #expect(try bob.state.withLock { try $0.store!.heldCount() } == 1)
        return (pipe, m.messageID)
    }
}

extension Node {
    func status(of id: MessageID) throws -> MessageStatus? {
        try outgoingMessage(id).status
    }

    func texts(_ conversation: Int64) throws -> [String] {
        try history(conversation, limit: 1000).messages.map(\.text)
    }
}

extension Node {
    /// One send of `text` to `contact`, planned (its ticket taken) and sealed as `send`
    /// does, its group not written yet: the test commits it itself
    /// (`sendCommits.commit(ticket:_:_:)`) to act between the group's write and its sync.
    func plannedSend(to contact: Int64, _ text: String) throws
        -> (ticket: UInt64, id: MessageID, sealed: Result<SealedSend, any Error>) {
        let (ticket, planned, keys) = try withUnlocked { store, keys, s in
            let (ticket, planned) = try s.delivery.planSend([(contact, text)], store, keys)
            sendCommits.taken(ticket)
            return (ticket, planned, keys)
        }
        let id = try #require(planned.first?.messageID)
        return (ticket, id, Result { try SealedSend(keys: keys, planned: planned) })
    }

    /// A carrier that records the IDs posted to it and answers nothing: the test answers
    /// for it (`accepted`, `refused`).
    func recordingCarrier() throws -> (carrier: Carrier, posted: Locked<[MessageID]>) {
        let posted = Locked<[MessageID]>([])
        let carrier = try openCarrier(transport: "relay", route: "relay.test:4433",
                                      relay: [UInt8](repeating: 0x42, count: 16), callbacks: CarrierCallbacks(
            post: { posts in posted.withLock { $0 += posts.map(\.packetID) } }, release: { _ in }, mailboxesChanged: {},
            closed: { _ in }))
        return (carrier, posted)
    }
}

extension Node {
    /// Runs the inbound pipeline on one routed packet as if it came over a link.
    func injectRouted(_ packet: [UInt8]) throws {
        try withEngine { engine, store, keys in
            try engine.batch(store) { try $0.receiveRouted(packet, on: 0, store, keys) }
        }
    }

    /// Receives `text` from `sender` (a contact's identity) through the inbound pipeline, as
    /// a link would bring it: sealed to this node, sender time `sentAt`. Returns the packet,
    /// for a test that brings it again.
    @discardableResult
    func receive(_ text: String, from sender: Identity, sentAt: Int64 = Clock.milliseconds(),
                 messageID: MessageID = .random()) throws -> [UInt8] {
        let key = try profile().publicIdentity.encryptionKey
        let (_, packet) = try SealedMessage.seal(Array(text.utf8), from: sender, to: key, createdMs: sentAt, messageID: messageID)
        try injectRouted(packet)
        return packet
    }
}

extension Pair {
    /// A memory link between the two once both see each other online over it and both
    /// event threads are idle (twice each: a turn may post another); `sendsFromAnyThread`
    /// as `MemoryPipe`'s. The caller closes it.
    func settledPipe(sendsFromAnyThread: Bool = false) throws -> MemoryPipe {
        let pipe = try MemoryPipe(alice, bob, sendsFromAnyThread: sendsFromAnyThread)
        #expect(eventually { (try? alice.contact(bobID).connection) == .online(transport: "memory") })
        #expect(eventually { (try? bob.contact(aliceID).connection) == .online(transport: "memory") })
        for node in [alice, bob, alice, bob] { try DrainSyncOutsideLockTests.waitForEventThread(node) }
        return pipe
    }
}

extension Pair {
    /// A memory link between the two, returned once Alice sees Bob online over it; Alice's
    /// events recorded into `events` from before it opened.
    func memoryLink(recording events: EventRecorder) throws -> MemoryPipe {
        events.attach(to: alice)
        let pipe = try MemoryPipe(alice, bob)
        #expect(eventually { (try? alice.contact(bobID).connection) == .online(transport: "memory") })
        return pipe
    }
}
