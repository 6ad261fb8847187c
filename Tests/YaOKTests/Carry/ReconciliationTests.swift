import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// Reconciliation between two honest sides (docs/PROTOCOL.md, "Reconciliation"): both end
/// knowing exactly the difference, equal stores settle in one small exchange, and the
/// bytes follow the difference, not the store.
@Suite struct ReconciliationTests {
    /// Both sides learn the exact difference, so after sending what each has and the other
    /// lacks both hold the union. Sizes 0…10,000, differences 0…500, split both ways.
    @Test(arguments: [0, 1, 2, 31, 32, 33, 100, 1_000, 10_000])
    func bothSidesEndWithTheUnion(common: Int) throws {
        for (k, d) in [0, 1, 10, 100, 500].enumerated() {
            for (onlyA, onlyB) in [(d, 0), (0, d), (d / 2, d - d / 2)] {
                let f = try ReconciliationFixture(seed: UInt64(common * 100 + k * 10 + onlyA), common: common,
                                                  onlyA: onlyA, onlyB: onlyB)
                let o = try f.run(try standardParameters())
                #expect(o.complete, "N=\(common) +\(onlyA)/+\(onlyB) did not finish")
                #expect(o.responder.isFinished)
                #expect(Set(o.initiator.have) == f.onlyA && o.initiator.have.count == f.onlyA.count)
                #expect(Set(o.initiator.want) == f.onlyB && o.initiator.want.count == f.onlyB.count)
                #expect(Set(o.responder.have) == f.onlyB && o.responder.have.count == f.onlyB.count)
                #expect(Set(o.responder.want) == f.onlyA && o.responder.want.count == f.onlyA.count)
                // The transfer each side then makes gives both the union.
                let unionA = Set(f.a.map(\.id)).union(o.initiator.want)
                let unionB = Set(f.b.map(\.id)).union(o.responder.want)
                #expect(unionA == unionB)
            }
        }
    }

    @Test func thirtyTwoByteIdentities() throws {
        let f = try ReconciliationFixture(seed: 32, common: 3_000, onlyA: 40, onlyB: 60, idLength: 32)
        let o = try f.run(try standardParameters(idLength: 32))
        #expect(o.complete)
        #expect(Set(o.initiator.have) == f.onlyA && Set(o.initiator.want) == f.onlyB)
        #expect(Set(o.responder.have) == f.onlyB && Set(o.responder.want) == f.onlyA)
    }

    /// All items with one expiry: every bound is an id prefix.
    @Test func oneExpiryForEveryItem() throws {
        let f = try ReconciliationFixture(seed: 7, common: 2_000, onlyA: 25, onlyB: 25, expiries: 1)
        let o = try f.run(try standardParameters())
        #expect(o.complete)
        #expect(Set(o.initiator.have) == f.onlyA && Set(o.initiator.want) == f.onlyB)
    }

    /// Equal stores: the initiator's one fingerprint and the responder's 3-byte "settled".
    @Test(arguments: [0, 1, 5, 1_000, 10_000])
    func equalStoresSettleInOneSmallExchange(n: Int) throws {
        for idLength in [16, 32] {
            let f = try ReconciliationFixture(seed: UInt64(n), common: n, onlyA: 0, onlyB: 0, idLength: idLength)
            let o = try f.run(try standardParameters(idLength: idLength))
            #expect(o.complete)
            #expect(o.roundTrips == 1)
            #expect(o.totalBytes <= 64, "equal stores of \(n) cost \(o.totalBytes) bytes")
            #expect(o.initiator.have.isEmpty && o.initiator.want.isEmpty)
            #expect(o.initiator.isFinished && o.responder.isFinished)
        }
    }

    /// Bytes grow with the difference d, not with the store size N: a 10× larger store
    /// costs a level or so more of ranges (log N), while 100× the difference costs tens of
    /// times the bytes. Counted in bytes (deterministic seeds), never in time. For scale,
    /// the id list of a 10,000-item store alone is 160,000 bytes.
    @Test func bytesFollowTheDifferenceNotTheStore() throws {
        func bytes(_ n: Int, _ d: Int) throws -> Int {
            let f = try ReconciliationFixture(seed: UInt64(n + d), common: n, onlyA: d / 2, onlyB: d - d / 2)
            let o = try f.run(try standardParameters())
            #expect(o.complete)
            return o.totalBytes
        }
        for d in [1, 10, 100] {
            let small = try bytes(1_000, d), large = try bytes(10_000, d)
            #expect(2 * large <= 5 * small, "d=\(d): N=1,000 → \(small) bytes, N=10,000 → \(large) bytes")
        }
        let d1 = try bytes(10_000, 1), d10 = try bytes(10_000, 10), d100 = try bytes(10_000, 100)
        #expect(d1 <= 1_000, "one difference in 10,000 items cost \(d1) bytes")
        #expect(d10 <= 10 * d1 && d100 <= 100 * d1)
        #expect(d100 >= 10 * d1, "100 differences cost \(d100) bytes, one \(d1)")
        #expect(d100 <= 160_000 / 4)
    }

    /// A budget too small for the whole difference: the encounter stops, and everything
    /// found so far is true (a prefix of the order settled, not nothing).
    @Test func aSpentBudgetKeepsWhatWasLearned() throws {
        let f = try ReconciliationFixture(seed: 99, common: 5_000, onlyA: 300, onlyB: 300)
        let p = try ReconciliationParameters(idLength: 16, maxMessageBytes: 1_024, maxRanges: 512, maxIDs: 64,
                                             buckets: 16, idListThreshold: 32, encounterBudget: 8 * 1024)
        let o = try f.run(p)
        #expect(!o.complete)
        #expect(o.initiator.bytesSent + o.initiator.bytesReceived <= p.encounterBudget)
        #expect(o.responder.bytesSent + o.responder.bytesReceived <= p.encounterBudget)
        #expect(!o.initiator.have.isEmpty && !o.initiator.want.isEmpty)
        #expect(Set(o.initiator.have).isSubset(of: f.onlyA) && Set(o.initiator.want).isSubset(of: f.onlyB))
        #expect(Set(o.responder.have).isSubset(of: f.onlyB) && Set(o.responder.want).isSubset(of: f.onlyA))
        // The same stores with room to finish find everything.
        let full = try f.run(try standardParameters())
        #expect(full.complete && Set(full.initiator.have) == f.onlyA)
    }

    /// The message that spends the budget is still read: here the responder's difference
    /// (16 ids the empty initiator lacks) leaves the initiator less than a message of
    /// budget, and it still learns all 16 (it used to stop before reading them).
    @Test func theLastMessageWithinTheBudgetIsStillLearned() throws {
        let p = try ReconciliationParameters(idLength: 16, maxMessageBytes: 16 * 1024, maxRanges: 512, maxIDs: 1024,
                                             buckets: 8, idListThreshold: 16, encounterBudget: 512)
        let f = try ReconciliationFixture(seed: 12, common: 0, onlyA: 0, onlyB: 16)
        let o = try f.run(p)
        #expect(o.initiator.bytesSent + o.initiator.bytesReceived > p.encounterBudget - ReconciliationParameters.minimumMessageBytes)
        #expect(Set(o.initiator.want) == f.onlyB)
        #expect(Set(o.responder.have) == f.onlyB)
    }

    /// Small message limits force truncated id lists and tail fingerprints; still exact.
    @Test func smallMessagesStillReconcileExactly() throws {
        let p = try ReconciliationParameters(idLength: 16, maxMessageBytes: 256, maxRanges: 18, maxIDs: 8,
                                             buckets: 16, idListThreshold: 32, encounterBudget: 1 << 24)
        for (seed, n, a, b) in [(1, 0, 0, 500), (2, 0, 400, 0), (3, 3_000, 150, 150), (4, 50, 20, 300)] {
            let f = try ReconciliationFixture(seed: UInt64(seed), common: n, onlyA: a, onlyB: b)
            let o = try f.run(p)
            #expect(o.complete)
            #expect(Set(o.initiator.have) == f.onlyA && Set(o.initiator.want) == f.onlyB)
            #expect(Set(o.responder.have) == f.onlyB && Set(o.responder.want) == f.onlyA)
        }
    }

    /// Plain id lists (the threshold at infinity) are exact too: the variant the benchmark
    /// compares with. A store of ten times `maxIDs` needs cut lists; a cut list once ended
    /// at a bound longer than the room left for it, so every answer was only the tail
    /// fingerprint and the encounter went round until its budget was spent.
    @Test func plainIDListsAreExact() throws {
        let p = try ReconciliationParameters(idLength: 16, maxMessageBytes: 16 * 1024, maxRanges: 512, maxIDs: 1024,
                                             buckets: 16, idListThreshold: Int.max, encounterBudget: 1 << 21)
        let f = try ReconciliationFixture(seed: 5, common: 10_000, onlyA: 5, onlyB: 5)
        let o = try f.run(p)
        #expect(o.complete)
        #expect(o.roundTrips <= 12)
        #expect(Set(o.initiator.have) == f.onlyA && Set(o.initiator.want) == f.onlyB)
        #expect(Set(o.responder.have) == f.onlyB && Set(o.responder.want) == f.onlyA)
    }

    @Test func encodingRoundTrips() throws {
        var rng = SeededRandom(seed: 11)
        let p = try standardParameters()
        for _ in 0..<200 {
            var ranges: [ReconciliationRange] = []
            var expiry: UInt64 = UInt64.random(in: 0..<1_000, using: &rng)
            let count = Int.random(in: 1...20, using: &rng)
            for i in 0..<count {
                let last = i == count - 1
                expiry += UInt64.random(in: 1...100_000, using: &rng)
                var prefix = rng.bytes(Int.random(in: 0...16, using: &rng))
                if prefix.last == 0 { prefix[prefix.count - 1] = 1 }
                let upper = last ? ReconciliationBound.infinity : ReconciliationBound(expiry: expiry, prefix: prefix)
                let payload: ReconciliationRange.Payload
                switch Int.random(in: 0...2, using: &rng) {
                case 0 where ranges.last?.payload != .skip && !(count == 1): payload = .skip
                case 1: payload = .fingerprint(rng.bytes(16))
                default: payload = .idList((0..<Int.random(in: 0...5, using: &rng)).map { _ in rng.bytes(16) }
                    .sorted { $0.lexicographicallyPrecedes($1) })
                }
                ranges.append(ReconciliationRange(upper: upper, payload: payload))
            }
            let message = ReconciliationMessage.ranges(ranges)
            #expect(try ReconciliationMessage.decode(message.encode(), parameters: p) == message)
        }
    }
}
