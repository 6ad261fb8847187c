import Testing
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
