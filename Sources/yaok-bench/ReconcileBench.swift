import YaOK

/// `yaok-bench reconcile`: bytes and round trips of carry reconciliation (docs/PROTOCOL.md,
/// "Reconciliation") for stores of N items differing by d (split between the sides), with
/// the standard parameters, then the variants the defaults were chosen from. Deterministic:
/// the same seed gives the same figures on every machine.
enum ReconcileBench {
    struct Variant {
        let name: String
        let parameters: ReconciliationParameters
    }

    static func run() throws {
        let standard = try ReconciliationParameters.standard(idLength: 16)
        print("  16-byte ids, standard parameters (\(standard.buckets) buckets, id lists below \(standard.idListThreshold) items);")
        print("  bytes = both directions, range messages and have/want lists; equal stores target ≤ 64 bytes")
        print("  " + "N".padding(to: 8) + "d".padding(to: 7) + "bytes".padding(to: 10) + "round trips".padding(to: 13) + "bytes/d")
        for n in [100, 1_000, 10_000] {
            for d in [0, 1, 10, 100, 1_000] {
                let o = try encounter(n: n, d: d, standard)
                let perD = d == 0 ? "-" : "\(o.totalBytes / d)"
                print("  " + "\(n)".padding(to: 8) + "\(d)".padding(to: 7) + "\(o.totalBytes)".padding(to: 10)
                      + "\(o.roundTrips)".padding(to: 13) + perD + (o.complete ? "" : "  (budget spent)"))
            }
        }
        print("  variants (N = 10,000; bytes / round trips for d = 1, 10, 100, 1,000):")
        var variants: [Variant] = []
        for buckets in [4, 8, 16, 32] {
            for threshold in [16, 32, 64] {
                variants.append(Variant(name: "\(buckets) buckets, lists < \(threshold)",
                                        parameters: try with(standard, buckets: buckets, threshold: threshold)))
            }
        }
        variants.append(Variant(name: "plain id lists", parameters: try with(standard, buckets: 16, threshold: Int.max)))
        for v in variants {
            var cells: [String] = []
            for d in [1, 10, 100, 1_000] {
                let o = try encounter(n: 10_000, d: d, v.parameters)
                cells.append("\(o.totalBytes)/\(o.roundTrips)" + (o.complete ? "" : "!"))
            }
            print("    " + v.name.padding(to: 26) + cells.map { $0.padding(to: 14) }.joined())
        }
    }

    static func with(_ p: ReconciliationParameters, buckets: Int, threshold: Int) throws -> ReconciliationParameters {
        try ReconciliationParameters(idLength: p.idLength, maxMessageBytes: p.maxMessageBytes, maxRanges: p.maxRanges,
                                     maxIDs: p.maxIDs, buckets: buckets, idListThreshold: threshold,
                                     encounterBudget: 1 << 26)
    }

    /// N shared items, d more split between the sides; expiries over two weeks of minutes.
    static func encounter(n: Int, d: Int, _ p: ReconciliationParameters) throws -> ReconciliationEncounter.Outcome {
        var rng = SeededRandom(seed: UInt64(n * 7 + d))
        func item() throws -> ReconciliationItem {
            let id = (0..<p.idLength).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            return try ReconciliationItem(expiry: 1_800_000_000 + rng.next() % (14 * 24 * 60) * 60, id: id, idLength: p.idLength)
        }
        let shared = try (0..<n).map { _ in try item() }
        let onlyA = try (0..<(d / 2)).map { _ in try item() }
        let onlyB = try (0..<(d - d / 2)).map { _ in try item() }
        return try ReconciliationEncounter.run(initiator: ReconciliationSet(shared + onlyA, idLength: p.idLength),
                                               responder: ReconciliationSet(shared + onlyB, idLength: p.idLength),
                                               parameters: p, hash: ReconciliationBLAKE2b())
    }
}
