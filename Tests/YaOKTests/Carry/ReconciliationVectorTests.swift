import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The reconciliation vectors of docs/PROTOCOL.md ("Reconciliation"): every message of two
/// encounters, byte for byte, recomputed from the stores the vectors describe.
@Suite struct ReconciliationVectorTests {
    /// Item i: expiry 1,800,000,000 + 60 × (i / 4), id = BLAKE2b-128 (unkeyed) of "item" || i
    /// as 4 bytes big-endian. `spec` is "0-39 -7" style: a range, then ids left out or added.
    static func item(_ i: Int) throws -> ReconciliationItem {
        var input = Array("item".utf8)
        input.appendBigEndian(UInt64(i), count: 4)
        return try ReconciliationItem(expiry: 1_800_000_000 + 60 * UInt64(i / 4),
                                      id: Sodium.blake2b(input, outputLength: 16), idLength: 16)
    }

    static func store(_ spec: String) throws -> [ReconciliationItem] {
        var indexes = Set<Int>()
        for word in spec.split(separator: " ") {
            if word.hasPrefix("-") { indexes.remove(Int(word.dropFirst())!); continue }
            if word.hasPrefix("+") { indexes.insert(Int(word.dropFirst())!); continue }
            let ends = word.split(separator: "-").map { Int($0)! }
            for i in ends[0]...ends[ends.count - 1] { indexes.insert(i) }
        }
        return try indexes.sorted().map(item)
    }

    /// The messages in the order they travel: initiator, responder, then the initiator's
    /// have/want lists (if any) before its next range message.
    static func transcript(_ a: [ReconciliationItem], _ b: [ReconciliationItem]) throws -> [[UInt8]] {
        let p = try ReconciliationParameters.standard(idLength: 16)
        var initiator = try Reconciler(store: ReconciliationSet(a, idLength: 16), role: .initiator, parameters: p, hash: ReconciliationBLAKE2b())
        var responder = try Reconciler(store: ReconciliationSet(b, idLength: 16), role: .responder, parameters: p, hash: ReconciliationBLAKE2b())
        var messages: [[UInt8]] = []
        var step = try initiator.initiate()
        while case .send(let m) = step {
            messages.append(m)
            let answer = try responder.receive(m)
            guard case .send(let reply) = answer else {
                if case .finish(let settled) = answer {
                    messages.append(settled)
                    step = try initiator.receive(settled)
                }
                break
            }
            messages.append(reply)
            step = try initiator.receive(reply)
            while let list = initiator.takeHaveWant() {
                messages.append(list)
                _ = try responder.receive(list)
            }
            if case .finish(let settled) = step {
                messages.append(settled)
                step = try responder.receive(settled)
            }
        }
        #expect(step == .finished)
        #expect(initiator.isFinished && responder.isFinished)
        return messages
    }

    @Test(arguments: ["reconcile-equal", "reconcile-small", "reconcile-differ"])
    func transcriptMatchesTheDocument(name: String) throws {
        let found = try ProtocolVector.all().filter { $0.name == name }
        try #require(found.count == 1, "vector \(name) missing from docs/PROTOCOL.md")
        let v = found[0]
        let a = try Self.store(try v.string("initiator")), b = try Self.store(try v.string("responder"))
        #expect(Array("YaOK-reconcile-v1".utf8) == (try v.hex("key")))
        if let sum = v.fields["initiator_sum"] {
            let set = try ReconciliationSet(a, idLength: 16)
            var input = try v.hex("initiator_sum")
            #expect(sum.count == 32)
            input.appendBigEndian(UInt64(a.count), count: 8)
            #expect(ReconciliationBLAKE2b().fingerprint(input) == set.fingerprint(0, a.count, hash: ReconciliationBLAKE2b()))
            #expect(ReconciliationBLAKE2b().fingerprint(input) == (try v.hex("initiator_fingerprint")))
        }
        let messages = try Self.transcript(a, b)
        var expected: [[UInt8]] = []
        var k = 1
        while v.fields["message_\(k)"] != nil {
            expected.append(try v.hex("message_\(k)"))
            k += 1
        }
        #expect(messages.count == expected.count)
        for (i, (got, want)) in zip(messages, expected).enumerated() {
            #expect(got == want, "message_\(i + 1): \(Hex.encode(got))")
        }
    }
}
