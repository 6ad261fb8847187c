import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKCrypto

/// docs/PROTOCOL.md §13.1 and §13.3 at the protocol level: two contacts run the key rules
/// over a virtual-clock network; an attacker gets the recipient's long-term secret and its
/// whole key state (what seizing the device, its PIN and its device secret yields).
@Suite struct ForwardSecrecyTests {
    let day: Int64 = 86_400_000

    /// A conversation in which both sides talk; every packet recorded.
    func converse(_ net: FSNetwork, rounds: Int) throws {
        for round in 0..<rounds {
            try net.send(net.alice, "a\(round)")
            try net.advance(3_600_000)
            try net.send(net.bob, "b\(round)")
            try net.advance(3_600_000)
        }
    }

    @Test func recordedTrafficThenSeizureOpensNothingDelivered() throws {
        let net = try FSNetwork()
        try converse(net, rounds: 20)
        let toBob = try #require(net.recorded[net.bob.id])
        #expect(toBob.count == 20)
        #expect(net.alice.outbox.isEmpty && net.bob.outbox.isEmpty)
        #expect(net.alice.stored.count == 20 && net.bob.stored.count == 20)
        // Only the first message went to the long-term key, before Bob had announced one;
        // it was counted (never silent).
        #expect(net.alice.fallbackSends == 1)
        // Seizure of Bob: long-term secret and every receiver key he holds.
        let opened = openedBySeizure(Array(toBob.dropFirst()), identity: net.bob.identity,
                                     keys: net.bob.ring.openingKeys, sender: net.alice.identity)
        #expect(opened == 0)
        // The first (fallback) message is the stated exception: sealed to the long-term key.
        #expect(openedBySeizure([toBob[0]], identity: net.bob.identity, keys: [], sender: net.alice.identity) == 1)
        #expect(net.bob.ring.own.count <= 3)
    }

    @Test func aMessageInFlightOpensOnlyWithinTheWindow() throws {
        let net = try FSNetwork()
        try converse(net, rounds: 3)
        // A message Alice sends that is lost on the way: recorded, never delivered.
        net.channel = { _ in [] }
        try net.send(net.alice, "in flight")
        let inFlight = try #require(net.recorded[net.bob.id]?.last)
        net.channel = { _ in [60_000] }
        #expect(openedBySeizure([inFlight], identity: net.bob.identity, keys: net.bob.ring.openingKeys,
                                sender: net.alice.identity) == 1)
        // Alice's resend opens, Bob moves on; 15 days after the key was superseded it is erased.
        for packet in try net.alice.resend(now: net.now) { net.post(packet) }
        try net.advance(3_600_000)
        try converse(net, rounds: 1)
        try net.advance(ReceiverKeyRing.retentionMs)
        net.bob.ring.expire(nowMs: net.now)
        #expect(openedBySeizure([inFlight], identity: net.bob.identity, keys: net.bob.ring.openingKeys,
                                sender: net.alice.identity) == 0)
    }

    @Test func oneExchangeEachWayHeals() throws {
        let net = try FSNetwork()
        try converse(net, rounds: 5)
        let copied = net.bob.ring  // the attacker copies Bob's keys, then loses access
        let before = net.recorded[net.bob.id]?.count ?? 0
        try converse(net, rounds: 1)  // one message and its ack each way
        let later = Array((net.recorded[net.bob.id] ?? []).dropFirst(before + 1))
        try converse(net, rounds: 5)
        let after = Array((net.recorded[net.bob.id] ?? []).dropFirst(before + 1))
        #expect(!after.isEmpty)
        #expect(later.isEmpty)
        #expect(openedBySeizure(after, identity: net.bob.identity, keys: copied.openingKeys, sender: net.alice.identity) == 0)
        // The copy did open what was sent before the heal (the test is not vacuous).
        let first = try #require(net.recorded[net.bob.id]?[before])
        #expect(openedBySeizure([first], identity: net.bob.identity, keys: copied.openingKeys, sender: net.alice.identity) == 1)
    }

    /// Seeds 2 and 5 each lost a message before a resend stopped releasing the key of its
    /// earlier copies (issue 19; `disorderSweep` found them).
    @Test(arguments: [1, 2, 3, 5])
    func disorderEveryMessageOpensExactlyOnce(seed: UInt64) throws {
        let (net, sent) = try disorder(seed: seed)
        // Every message in, each stored once though most opened several times.
        #expect(net.alice.stored.count == sent && net.bob.stored.count == sent)
        #expect(net.alice.opens > sent && net.bob.opens > sent)
        // Then a month in which Bob is offline (nothing arrives either way), and back.
        net.offline = net.bob
        try net.advance(30 * day)
        net.offline = nil
        for round in 0..<5 {
            try net.send(net.alice, "back \(round)")
            try net.advance(3_600_000)
        }
        net.channel = { _ in [60_000] }
        for p in try net.alice.resend(now: net.now) { net.post(p) }
        try net.advance(day)
        #expect(net.bob.stored.count == sent + 5)
        #expect(net.alice.maxOwnKeys <= ReceiverKeyRing.cap && net.bob.maxOwnKeys <= ReceiverKeyRing.cap)
        #expect(net.alice.ring.pending.count <= ReceiverKeyRing.maxPending)
    }

    /// Both sides send every 4 hours for 8 days over a channel that loses 1 packet in 5 and
    /// delivers the rest 1 to 8 times, each copy up to 14 days late; then resends for 20
    /// days. Every draw (the channel's, the message IDs) comes from `seed`, so a failing
    /// seed replays. Returns the network and how many messages each side sent.
    func disorder(seed: UInt64, trace: ((String) -> Void)? = nil) throws -> (FSNetwork, Int) {
        let net = try FSNetwork(seed: seed)
        net.alice.trace = trace
        net.bob.trace = trace
        var random = SeededRandom(seed: seed)
        net.channel = { _ in
            guard Int.random(in: 0..<5, using: &random) != 0 else { return [] }
            return (0..<Int.random(in: 1...8, using: &random)).map { _ in Int64.random(in: 0...(14 * 86_400_000), using: &random) }
        }
        var sent = 0
        for step in 0..<48 {  // both sides at once, every 4 hours, for 8 days
            try net.send(net.alice, "a\(step)")
            try net.send(net.bob, "b\(step)")
            sent += 1
            try net.advance(4 * 3_600_000)
            if step % 3 == 0 { for p in try net.alice.resend(now: net.now) + net.bob.resend(now: net.now) { net.post(p) } }
        }
        // Resends until everything is in (20 days: past the 14-day delays).
        for _ in 0..<20 {
            for p in try net.alice.resend(now: net.now) + net.bob.resend(now: net.now) { net.post(p) }
            try net.advance(day)
        }
        return (net, sent)
    }

    /// On demand (too slow for every run, about 3 s a seed): the disorder run over seeds
    /// 1...YAOK_DISORDER_SEEDS, each expected to deliver everything; YAOK_DISORDER_TRACE=SEED
    /// prints that seed's story (each seal, open, failed open, erasure) to trace a lost message.
    @Test(.enabled(if: sweepSeeds > 0 || traceSeed != nil))
    func disorderSweep() throws {
        if let seed = traceSeed {
            let (net, sent) = try disorder(seed: seed, trace: { print($0) })
            let short = { (ids: Set<[UInt8]>) in ids.map { $0.prefix(4).map { String(format: "%02x", $0) }.joined() } }
            print("seed \(seed): of \(sent) each, Alice stored \(net.alice.stored.count), Bob \(net.bob.stored.count); "
                  + "never stored at Alice \(short(net.bob.sentIDs.subtracting(net.alice.stored))), "
                  + "at Bob \(short(net.alice.sentIDs.subtracting(net.bob.stored)))")
        }
        for seed in UInt64(1)...max(1, sweepSeeds) where sweepSeeds > 0 {
            let (net, sent) = try disorder(seed: seed)
            #expect(net.alice.stored.count == sent && net.bob.stored.count == sent, "seed \(seed)")
            #expect(net.alice.maxOwnKeys <= ReceiverKeyRing.cap && net.bob.maxOwnKeys <= ReceiverKeyRing.cap, "seed \(seed)")
        }
    }

    /// The 15-day retention alone (no release arrives: the contact vanished) erases a
    /// superseded key, and not before.
    @Test func retentionErasesASupersededKeyWhenNoReleaseComes() throws {
        let net = try FSNetwork()
        try converse(net, rounds: 3)
        net.channel = { packet in
            if case .ack = packet { return [] }  // no ack arrives: Alice never settles
            return [60_000]
        }
        try net.send(net.alice, "x")          // sealed to Bob's newest key; Bob mints a new one
        let x = try #require(net.recorded[net.bob.id]?.last)
        try net.advance(3_600_000)
        try net.send(net.bob, "announcing")   // tells Alice Bob's new key
        try net.advance(3_600_000)
        try net.send(net.alice, "y")          // sealed to the new key: supersedes x's key
        try net.advance(3_600_000)
        net.offline = net.alice                // Alice is gone: no release will come
        #expect(net.bob.stored.count == 5)
        let holding = net.bob.ring.openingKeys
        #expect(openedBySeizure([x], identity: net.bob.identity, keys: holding, sender: net.alice.identity) == 1)
        try net.advance(ReceiverKeyRing.retentionMs - 2 * 3_600_000)
        net.bob.ring.expire(nowMs: net.now)
        #expect(openedBySeizure([x], identity: net.bob.identity, keys: net.bob.ring.openingKeys, sender: net.alice.identity) == 1)
        try net.advance(2 * 3_600_000)
        net.bob.ring.expire(nowMs: net.now)
        #expect(openedBySeizure([x], identity: net.bob.identity, keys: net.bob.ring.openingKeys, sender: net.alice.identity) == 0)
        #expect(net.bob.ring.own.count == 2)  // the key y opened with, and the newest minted
    }

    @Test func theCapNeverStopsAConversation() throws {
        let net = try FSNetwork()
        try converse(net, rounds: 2)
        // One message of Alice's is lost: it stays unsettled under Bob's key of the time, so
        // Alice's release stays below it and Bob's superseded keys pile up past the cap.
        net.channel = { _ in [] }
        try net.send(net.alice, "lost")
        net.channel = { _ in [60_000] }
        try converse(net, rounds: 50)
        #expect(net.bob.stored.count == 52 && net.alice.stored.count == 52)
        #expect(net.bob.maxOwnKeys == ReceiverKeyRing.cap)
        // The lost message, resent (sealed to Bob's newest key), still opens.
        for packet in try net.alice.resend(now: net.now) { net.post(packet) }
        try net.advance(3_600_000)
        #expect(net.bob.stored.count == 53)
        #expect(net.alice.outbox.isEmpty)
    }
}

private let sweepSeeds = ProcessInfo.processInfo.environment["YAOK_DISORDER_SEEDS"].flatMap { UInt64($0) } ?? 0
private let traceSeed = ProcessInfo.processInfo.environment["YAOK_DISORDER_TRACE"].flatMap { UInt64($0) }
