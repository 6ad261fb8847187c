import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// What a stranger in radio range can send (docs/PROTOCOL.md, "Reconciliation"): every
/// malformed message is refused with a message naming the rule it breaks, before anything
/// is allocated for its counts; a peer that never settles is stopped by the budget.
@Suite struct ReconciliationHostileTests {
    let p: ReconciliationParameters
    init() throws { p = try standardParameters() }

    func refusal(_ bytes: [UInt8]) -> String? {
        do {
            _ = try ReconciliationMessage.decode(bytes, parameters: p)
            return nil
        } catch let error as YaOKError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    func expectRefused(_ bytes: [UInt8], _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let why = refusal(bytes)
        #expect(why?.contains(fragment) == true, "\(bytes): \(why ?? "accepted")", sourceLocation: sourceLocation)
    }

    let id1 = [UInt8](repeating: 1, count: 16)
    let id2 = [UInt8](repeating: 2, count: 16)
    let fp = [UInt8](repeating: 0xab, count: 16)

    @Test func headerAndCounts() {
        expectRefused([], "truncated at version")
        #expect(errorCode { try ReconciliationMessage.decode([2, 1, 0], parameters: p) } == .unsupportedVersion)
        expectRefused([1, 9], "unknown kind 9")
        expectRefused([1, 1, 0, 0], "1 bytes after the message")
        // 2^63 ranges, and 100 ranges in 0 bytes: refused before any allocation.
        expectRefused([1, 1, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0], "more than the limit of 512")
        expectRefused([1, 1, 100], "100 ranges cannot fit")
        expectRefused([1, 1, 0x80, 0x01], "leading zero digit")
        expectRefused([1, 1] + [UInt8](repeating: 0xff, count: 11), "varint")
        expectRefused([UInt8](repeating: 1, count: p.maxMessageBytes + 1), "more than the limit of \(p.maxMessageBytes)")
        // An id list claiming more ids than the limit, or than the bytes hold.
        expectRefused([1, 1, 1, 0, 0, 2, 0x88, 0x01], "more than the limit of 1024")
        expectRefused([1, 1, 1, 0, 0, 2, 5] + id1, "5 ids cannot fit")
    }

    @Test func bounds() {
        // Range with bound (expiry code, prefix) then mode.
        expectRefused([1, 1, 1, 5, 0, 1] + fp, "the last range does not end at infinity")
        expectRefused([1, 1, 2, 0, 0, 1] + fp + [0, 0, 1] + fp, "infinity before the last range")
        expectRefused([1, 1, 1, 0, 1, 7, 1] + fp, "infinity with an id prefix")
        expectRefused([1, 1, 2, 5, 17] + [UInt8](repeating: 1, count: 17) + [1] + fp + [0, 0, 1] + fp, "longer than an id")
        expectRefused([1, 1, 2, 5, 2, 7, 0, 1] + fp + [0, 0, 1] + fp, "ends in a zero byte")
        // Same expiry (delta code 1 = +0), prefix 07 then 03: not ascending.
        expectRefused([1, 1, 3, 5, 1, 7, 1] + fp + [1, 1, 3, 1] + fp + [0, 0, 1] + fp, "not above")
        // Equal bounds.
        expectRefused([1, 1, 3, 5, 0, 1] + fp + [1, 0, 1] + fp + [0, 0, 1] + fp, "not above")
        // The zero bound as an upper bound (an empty first range).
        expectRefused([1, 1, 2, 1, 0, 1] + fp + [0, 0, 1] + fp, "not above")
        // Expiry deltas summing past 2^64 - 2 (2046, then + 2^64 - 2).
        let big: [UInt8] = [0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]  // 2^64 - 1
        expectRefused([1, 1, 3, 0x8f, 0x7f, 0, 1] + fp + big + [0, 1] + fp + [0, 0, 1] + fp, "past the largest value")
    }

    @Test func modesAndLists() {
        expectRefused([1, 1, 1, 0, 0, 7], "unknown mode 7")
        expectRefused([1, 1, 1, 0, 0, 0], "a single skip")
        expectRefused([1, 1, 3, 5, 0, 0, 6, 0, 0, 0, 0, 1] + fp, "adjacent skips")
        expectRefused([1, 1, 1, 0, 0, 1] + fp.prefix(15), "truncated at fingerprint")
        expectRefused([1, 1, 1, 0, 0, 2, 2] + id2 + id1, "not strictly ascending")
        expectRefused([1, 1, 1, 0, 0, 2, 2] + id1 + id1, "not strictly ascending")
        expectRefused([1, 1, 1, 0, 0, 3, 1] + id1 + [1] + id1, "both extra and missing")
        expectRefused([1, 2, 0, 0], "empty have/want lists")
        expectRefused([1, 2, 1] + id1 + [1] + id1, "both had and wanted")
        expectRefused([1, 2, 2] + id2 + id1 + [0], "not strictly ascending")
        expectRefused([1, 2, 1] + id1, "truncated at want list count")
    }

    /// Messages a side never expects from its peer's role.
    @Test func wrongDirection() throws {
        let store = try ReconciliationSet([], idLength: 16)
        var initiator = try Reconciler(store: store, role: .initiator, parameters: p, hash: ReconciliationBLAKE2b())
        _ = try initiator.initiate()
        #expect(errorCode { try initiator.receive(ReconciliationMessage.haveWant(have: [id1], want: []).encode()) } == .malformedPacket)
        var responder = try Reconciler(store: store, role: .responder, parameters: p, hash: ReconciliationBLAKE2b())
        let difference = ReconciliationMessage.ranges([ReconciliationRange(upper: .infinity, payload: .difference(extra: [id1], missing: []))])
        #expect(errorCode { try responder.receive(difference.encode()) } == .malformedPacket)
    }

    /// Seeded garbage and mutations of real messages: each is refused with a YaOKError or
    /// accepted in its one canonical form; a responder fed them throws or answers with a
    /// message its own decoder accepts.
    @Test func garbageAndMutations() throws {
        var rng = SeededRandom(seed: 2026)
        let f = try ReconciliationFixture(seed: 3, common: 500, onlyA: 20, onlyB: 20)
        let store = try ReconciliationSet(f.b, idLength: 16)
        // Real messages of an encounter, to mutate.
        var samples: [[UInt8]] = []
        var a = try Reconciler(store: ReconciliationSet(f.a, idLength: 16), role: .initiator, parameters: p, hash: ReconciliationBLAKE2b())
        var b = try Reconciler(store: store, role: .responder, parameters: p, hash: ReconciliationBLAKE2b())
        var step = try a.initiate()
        while case .send(let m) = step {
            samples.append(m)
            guard case .send(let reply) = try b.receive(m) else { break }
            samples.append(reply)
            step = try a.receive(reply)
            while let list = a.takeHaveWant() { samples.append(list) }
        }
        #expect(samples.count >= 4)
        for i in 0..<3_000 {
            var bytes: [UInt8]
            if i % 3 == 0 {
                bytes = rng.bytes(Int.random(in: 0...200, using: &rng))
                if bytes.count >= 2 { bytes[0] = 1; bytes[1] = UInt8.random(in: 1...3, using: &rng) }
            } else {
                bytes = samples[Int.random(in: 0..<samples.count, using: &rng)]
                for _ in 0..<Int.random(in: 1...4, using: &rng) where !bytes.isEmpty {
                    let at = Int.random(in: 0..<bytes.count, using: &rng)
                    switch Int.random(in: 0...2, using: &rng) {
                    case 0: bytes[at] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
                    case 1: bytes.removeLast(Int.random(in: 1...bytes.count, using: &rng))
                    default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: at)
                    }
                }
            }
            do {
                let message = try ReconciliationMessage.decode(bytes, parameters: p)
                #expect(message.encode() == bytes, "accepted a non-canonical form")
            } catch let error as YaOKError {
                #expect(error.code == .malformedPacket || error.code == .unsupportedVersion)
            }
            var responder = try Reconciler(store: store, role: .responder, parameters: p, hash: ReconciliationBLAKE2b())
            let step = try? responder.receive(bytes)
            if case .send(let reply)? = step {
                #expect(reply.count <= p.maxMessageBytes)
                #expect((try? ReconciliationMessage.decode(reply, parameters: p)) != nil, "a reply its own decoder refuses")
            }
        }
    }

    /// A peer that answers every message with a fingerprint that never matches: the
    /// initiator stops when its budget is spent, having sent and read no more than it.
    @Test func aPeerThatNeverSettlesIsStoppedByTheBudget() throws {
        var rng = SeededRandom(seed: 9)
        let f = try ReconciliationFixture(seed: 4, common: 2_000, onlyA: 0, onlyB: 0)
        let q = try ReconciliationParameters(idLength: 16, maxMessageBytes: 4_096, maxRanges: 512, maxIDs: 256,
                                             buckets: 8, idListThreshold: 16, encounterBudget: 64 * 1024)
        var a = try Reconciler(store: ReconciliationSet(f.a, idLength: 16), role: .initiator, parameters: q, hash: ReconciliationBLAKE2b())
        var step = try a.initiate()
        var rounds = 0
        while case .send = step {
            rounds += 1
            #expect(rounds < 1_000)
            let lie = ReconciliationMessage.ranges([ReconciliationRange(upper: .infinity, payload: .fingerprint(rng.bytes(16)))])
            step = try a.receive(lie.encode())
        }
        #expect(step == .budgetExhausted)
        #expect(a.bytesSent + a.bytesReceived <= q.encounterBudget)
    }

    /// Once the budget is spent, the next messages are not read (§11 step 4: the message
    /// that spent it is the last one read). Before, the budget stopped only the answers: a
    /// peer could go on sending have/want and range messages, each decoded and worked
    /// through (fingerprints, searches, haves found), without end.
    @Test func afterTheBudgetIsSpentNothingMoreIsRead() throws {
        let f = try ReconciliationFixture(seed: 5, common: 60, onlyA: 0, onlyB: 0)
        let q = try ReconciliationParameters(idLength: 16, maxMessageBytes: 4_096, maxRanges: 512, maxIDs: 256,
                                             buckets: 8, idListThreshold: 16, encounterBudget: 1_024)
        var responder = try Reconciler(store: ReconciliationSet(f.b, idLength: 16), role: .responder, parameters: q,
                                       hash: ReconciliationBLAKE2b())
        // Have/want lists of 20 bytes, each wanting one item the responder holds.
        let ids = f.b.map(\.id)
        var steps: [Reconciler.Step] = []
        for id in ids { steps.append(try responder.receive([0x01, 0x02, 0x00, 0x01] + id)) }
        let readable = (q.encounterBudget - ReconciliationParameters.minimumMessageBytes) / 20 + 1
        #expect(responder.have.count == readable)
        #expect(steps.dropFirst(readable).allSatisfy { $0 == .budgetExhausted })
        #expect(responder.bytesReceived == ids.count * 20)
    }
}

/// The fuzzer's reconciliation seeds (written from the document by fuzz/make-seeds.py,
/// independently of the Swift code) are accepted messages, so the fuzzer starts from valid
/// structure and mutates it.
@Suite struct ReconciliationSeedTests {
    @Test func seedsDecode() throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { root.deleteLastPathComponent() }
        let corpus = root.appendingPathComponent("fuzz/corpus")
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus.path).filter { $0.hasPrefix("reconcile-") }
        #expect(names.count >= 6)
        for name in names {
            let bytes = [UInt8](try Data(contentsOf: corpus.appendingPathComponent(name)))
            let idLength = name.contains("32") ? 32 : 16
            let message = try ReconciliationMessage.decode(bytes, parameters: try standardParameters(idLength: idLength))
            #expect(message.encode() == bytes, "\(name)")
        }
    }
}
