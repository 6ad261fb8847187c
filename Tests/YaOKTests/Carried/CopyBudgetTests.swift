import Testing
@testable import YaOKSupport
@testable import YaOKWire

/// Binary spray-and-wait (docs/PROTOCOL.md §10.5).
@Suite struct CopyBudgetTests {
    @Test func halvingNeverMakesMoreCopiesThanTheBudget() {
        #expect(CopyBudget.split(1) == nil)
        #expect(CopyBudget.split(2)! == (1, 1))
        #expect(CopyBudget.split(7)! == (4, 3))
        #expect(CopyBudget.split(8)! == (4, 4))
        // Above the cap counts as the cap.
        #expect(CopyBudget.split(255)! == (4, 4))
        // Spraying every copy as far as it goes ends with exactly `maximum` holders of budget 1.
        var holders: [UInt8] = [CopyBudget.maximum]
        while let i = holders.firstIndex(where: { $0 > 1 }), let (kept, given) = CopyBudget.split(holders[i]) {
            holders[i] = kept
            holders.append(given)
        }
        #expect(holders.count == Int(CopyBudget.maximum))
        #expect(holders.allSatisfy { $0 == 1 })
    }
}

/// Hand-overs of a whole packet (docs/PROTOCOL.md §10.5).
@Suite struct HandOverTests {
    func packet(hop: UInt8 = 8, budget: UInt8 = 8) throws -> CarriedPacket {
        try CarriedPacket(hopLimit: hop, copyBudget: budget, expiryHour: 500_000, routingTag: RoutingTag(value: 1),
                          claimHash: [UInt8](repeating: 7, count: 16), payload: [1, 2, 3])
    }

    @Test func sprayingMakesAtMostTheCapOfCopies() throws {
        var rng = SeededRandom(seed: 10)
        for start: UInt8 in [1, 2, 5, 8, 9, 200] {
            var holders = [try packet(hop: 10, budget: start)]
            var i = 0
            // Every holder hands over as long as it may, in random order.
            while i < 10_000, let j = holders.indices.filter({ holders[$0].copyBudget > 1 && holders[$0].hopLimit > 0 }).randomElement(using: &rng) {
                guard let (kept, given) = holders[j].handOver(using: &rng) else { break }
                holders[j] = kept
                holders.append(given)
                i += 1
            }
            #expect(holders.count <= Int(CopyBudget.maximum))
            #expect(holders.count == Int(min(start, CopyBudget.maximum)))
            // Only bytes 2 and 3 changed.
            let base = try packet().encode()
            for h in holders { #expect(Array(h.encode()[4...]) == Array(base[4...])) }
        }
    }

    @Test func waitPhaseAndHopLimitZeroGiveNothing() throws {
        var rng = SeededRandom(seed: 11)
        #expect(try packet(budget: 1).handOver(using: &rng) == nil)
        #expect(try packet(hop: 0).handOver(using: &rng) == nil)
        let (kept, given) = try #require(try packet(hop: 3, budget: 7).handOver(using: &rng))
        #expect(kept.copyBudget == 4 && given.copyBudget == 3)
        #expect(kept.hopLimit == 3 && given.hopLimit == 2)
        // A hop limit over the cap is clamped, as §4.4.
        let (k2, g2) = try #require(try packet(hop: 255, budget: 2).handOver(using: &rng))
        #expect(k2.hopLimit == HopLimit.maximum)
        #expect(g2.hopLimit <= HopLimit.maximum)
    }
}
