@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// Two stores built from one seed: `common` items on both sides, `onlyA` on the
/// initiator's, `onlyB` on the responder's. Expiries come from a narrow window so that many
/// items share one and bounds need id prefixes, as carried packets made the same hour do.
struct ReconciliationFixture {
    let a: [ReconciliationItem]
    let b: [ReconciliationItem]
    let onlyA: Set<[UInt8]>
    let onlyB: Set<[UInt8]>

    init(seed: UInt64, common: Int, onlyA: Int, onlyB: Int, idLength: Int = 16, expiries: UInt64 = 200) throws {
        var rng = SeededRandom(seed: seed)
        func item() throws -> ReconciliationItem {
            try ReconciliationItem(expiry: 1_800_000_000 + UInt64.random(in: 0..<expiries, using: &rng),
                                   id: rng.bytes(idLength), idLength: idLength)
        }
        let shared = try (0..<common).map { _ in try item() }
        let extraA = try (0..<onlyA).map { _ in try item() }
        let extraB = try (0..<onlyB).map { _ in try item() }
        a = (shared + extraA).shuffled(using: &rng)
        b = (shared + extraB).shuffled(using: &rng)
        self.onlyA = Set(extraA.map(\.id))
        self.onlyB = Set(extraB.map(\.id))
    }

    func run(_ parameters: ReconciliationParameters) throws -> ReconciliationEncounter.Outcome {
        try ReconciliationEncounter.run(initiator: ReconciliationSet(a, idLength: parameters.idLength),
                                        responder: ReconciliationSet(b, idLength: parameters.idLength),
                                        parameters: parameters, hash: ReconciliationBLAKE2b())
    }
}

func standardParameters(idLength: Int = 16) throws -> ReconciliationParameters {
    try ReconciliationParameters.standard(idLength: idLength)
}
