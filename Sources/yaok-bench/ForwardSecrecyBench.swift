import YaOK

/// Forward secrecy figures (issue 19, "Benchmarks", docs/PROTOCOL.md §13):
///  - seal+open per message, the forward-secret envelope (§13.2) against today's packet
///    envelope (§3.1) (target ≤ 1.5×), with 1 and with 32 receiver keys retained (the cap:
///    the opener scans their selectors);
///  - bytes added per message;
///  - key state per contact after 10,000 messages, and after a month offline.
enum ForwardSecrecyBench {
    static let rounds = 5
    static let timestamp: Int64 = 1_700_000_000_000

    static func run() throws {
        try sealOpen(bodySize: 1024)
        Measure.report("added bytes per message", "\(ForwardSecretEnvelope.overhead - PacketEnvelope.overhead) B",
                       target: "< 64 B")
        try carriedSealOpen(bodySize: 1024)
        Measure.report("added bytes per carried copy", "\(CarriedSeal.forwardSecretOverhead - PacketEnvelope.overhead) B",
                       target: "< 64 B")
        try keyState()
        sendsAtTheBound()
    }

    /// A carried copy (§13.6) against §10.4's: seal+open of a 1 KB message, 1 key held.
    static func carriedSealOpen(bodySize: Int) throws {
        let alice = try Identity(name: "Alice"), bob = try Identity(name: "Bob")
        let aliceKey = alice.publicIdentity.encryptionKey
        let route = try RoutePair(own: alice, peerKey: bob.publicIdentity.encryptionKey)
        let content = try CarriedContent.message([UInt8](repeating: 0x61, count: bodySize), createdMs: timestamp)
        let held = [try ReceiverKeyPair.generate(id: 1)]
        let announce = Announcement(key: try ReceiverKeyPair.generate(id: 1).key, release: 0)
        let iterations = 1500
        var today = Double.infinity, forwardSecret = Double.infinity
        for _ in 0..<rounds {
            today = min(today, try Measure.perIteration(iterations) {
                let packet = try CarriedSeal.seal(content, from: alice, route: route)
                _ = try CarriedSeal.open(packet, by: bob, senderKey: aliceKey)
            })
            forwardSecret = min(forwardSecret, try Measure.perIteration(iterations) {
                let packet = try CarriedSeal.sealForwardSecret(content, from: alice, route: route, receiverKey: held[0].key,
                                                               announce: announce)
                _ = try CarriedSeal.openForwardSecret(packet, by: bob, senderKey: aliceKey, receiverKeys: held)
            })
        }
        Measure.report("carried copy seal+open (§10.4), 1 KB", "\(Measure.format(today * 1e6, decimals: 1)) µs")
        Measure.report("carried copy seal+open forward-secret (§13.6), 1 KB", "\(Measure.format(forwardSecret * 1e6, decimals: 1)) µs")
        Measure.report("ratio carried forward-secret / §10.4", "\(Measure.format(forwardSecret / today))x", target: "<= 1.5x")
    }

    static func sealOpen(bodySize: Int) throws {
        let alice = try Identity(name: "Alice"), bob = try Identity(name: "Bob")
        let aliceKey = alice.publicIdentity.encryptionKey, bobKey = bob.publicIdentity.encryptionKey
        let body = [UInt8](repeating: 0x61, count: bodySize), messageID = [UInt8](repeating: 7, count: 16)
        let headerAD = [UInt8](repeating: 1, count: 36)
        let keys = try (1...UInt32(ReceiverKeyRing.cap)).map { try ReceiverKeyPair.generate(id: $0) }
        let announce = Announcement(key: try ReceiverKeyPair.generate(id: 1).key, release: 0)
        let iterations = 1500
        var today = Double.infinity, oneKey = Double.infinity, capKeys = Double.infinity
        for _ in 0..<rounds {
            today = min(today, try Measure.perIteration(iterations) {
                let sealed = try PacketEnvelope.seal(body, from: alice, to: bobKey, messageID: messageID,
                                                     timestamp: timestamp, associatedData: headerAD)
                _ = try PacketEnvelope.open(sealed, by: bob, senderKey: aliceKey, messageID: messageID,
                                            timestamp: timestamp, associatedData: headerAD)
            })
            for (held, best) in [(Array(keys.suffix(1)), 1), (keys, 32)] {
                let time = try Measure.perIteration(iterations) {
                    let sealed = try ForwardSecretEnvelope.seal(body, from: alice, to: bobKey, receiverKey: held[held.count - 1].key,
                                                                announce: announce, messageID: messageID,
                                                                timestamp: timestamp, associatedData: headerAD)
                    _ = try ForwardSecretEnvelope.open(sealed, by: bob, senderKey: aliceKey, receiverKeys: held,
                                                       messageID: messageID, timestamp: timestamp, associatedData: headerAD)
                }
                if best == 1 { oneKey = min(oneKey, time) } else { capKeys = min(capKeys, time) }
            }
        }
        let label = "\(bodySize / 1024) KB"
        Measure.report("packet envelope seal+open (today), \(label)", "\(Measure.format(today * 1e6, decimals: 1)) µs")
        Measure.report("forward-secret seal+open, 1 key, \(label)", "\(Measure.format(oneKey * 1e6, decimals: 1)) µs")
        Measure.report("forward-secret seal+open, 32 keys, \(label)", "\(Measure.format(capKeys * 1e6, decimals: 1)) µs")
        Measure.report("ratio forward-secret / today, 32 keys", "\(Measure.format(capKeys / today))x", target: "<= 1.5x")
    }

    /// The logical bytes a ring holds (what the store keeps, before the vault's sealing):
    /// per own key ID 4 + secret 32 + public 32 + two times 16; the peer's key 36; the
    /// counters 8; per unsettled sent message 16 + 4 + 8.
    static func stateBytes(_ ring: ReceiverKeyRing) -> Int {
        ring.own.count * 84 + (ring.peerKey == nil ? 0 : 36) + 8 + ring.pending.count * 28
    }

    /// A contact that acks nothing (offline for weeks): past ReceiverKeyRing.maxPending
    /// unsettled sends, each send forgets the one expiring first.
    static func sendsAtTheBound() {
        var ring = ReceiverKeyRing()
        func id(_ n: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(n).bigEndian, Array.init) + [UInt8](repeating: 0, count: 8) }
        for n in 0..<ReceiverKeyRing.maxPending { ring.sent(messageID: id(n), peerKeyID: 7, expiresMs: timestamp + Int64(n)) }
        var n = ReceiverKeyRing.maxPending
        let seconds = Measure.perIteration(2_000) {
            ring.sent(messageID: id(n), peerKeyID: 7, expiresMs: timestamp + Int64(n))
            n += 1
        }
        // A scan of every unsettled send for the one expiring first: ~15 µs here, a few
        // percent of a send's CPU, and only for a contact that never acks.
        Measure.report("ring: a send past \(ReceiverKeyRing.maxPending) unsettled", Measure.format(seconds * 1e6, decimals: 1) + " µs")
    }

    /// 10,000 messages from Alice to Bob, each acked at once (rings only: the crypto is above).
    static func keyState() throws {
        var alice = ReceiverKeyRing(), bob = ReceiverKeyRing()
        var now = timestamp
        _ = try bob.acknowledged([], announced: try alice.announcement(nowMs: now), nowMs: now)
        try alice.acknowledged([], announced: try bob.announcement(nowMs: now), nowMs: now)
        for n in 0..<10_000 {
            now += 60_000
            let id = withUnsafeBytes(of: UInt64(n).bigEndian, Array.init) + [UInt8](repeating: 0, count: 8)
            guard let key = alice.peerKey else { throw BenchError("no key") }
            let announced = try alice.announcement(nowMs: now)
            alice.sent(messageID: id, peerKeyID: key.id, expiresMs: now + 14 * 86_400_000)
            try bob.opened(with: key.id, announced: announced, nowMs: now)
            try alice.acknowledged([id], announced: try bob.announcement(nowMs: now), nowMs: now)
            bob.expire(nowMs: now)
            alice.expire(nowMs: now)
        }
        Measure.report("key state per contact after 10,000 messages (receiver)", "\(stateBytes(bob)) B, \(bob.own.count) keys")
        Measure.report("key state per contact after 10,000 messages (sender)", "\(stateBytes(alice)) B, \(alice.own.count) keys")
        now += 30 * 86_400_000
        bob.expire(nowMs: now)
        alice.expire(nowMs: now)
        Measure.report("key state per contact after a month offline", "\(stateBytes(bob)) B, \(bob.own.count) keys")
    }
}
