import Testing
@testable import YaOKCrypto

/// PendingSends keeps per key ID the latest expiry of its entries, so that the release asks a
/// few keys instead of every entry: after any sequence of sends, resends, acks and expiries
/// it gives what a scan of every entry gives, and it names the IDs written since stored.
@Suite struct PendingSendsTests {
    @Test func lowestUnexpiredKeyIsWhatAScanGives() {
        var random = SystemRandomNumberGenerator()
        var pending = PendingSends()
        var plain: [[UInt8]: PendingSends.Entry] = [:]
        for step in 0..<4_000 {
            let id = [UInt8(truncatingIfNeeded: Int.random(in: 0..<64, using: &random))] + [UInt8](repeating: 0, count: 15)
            let entry: PendingSends.Entry? = Int.random(in: 0..<3, using: &random) == 0
                ? nil : (UInt32.random(in: 1...6, using: &random), Int64.random(in: 0...1_000, using: &random))
            pending[id] = entry
            plain[id] = entry
            let now = Int64.random(in: 0...1_000, using: &random)
            let include = { (key: UInt32) in key != 3 }
            let scanned = plain.values.filter { $0.expiresMs > now && include($0.keyID) }.map(\.keyID).min()
            #expect(pending.lowestKey(unexpiredAt: now, where: include) == scanned, "step \(step)")
            if pending.lowestKey(unexpiredAt: now, where: include) != scanned { return }
        }
        #expect(pending.count == plain.count)
        #expect(PendingSends(plain).lowestKey(unexpiredAt: 500) { _ in true }
                == plain.values.filter { $0.expiresMs > 500 }.map(\.keyID).min())
    }

    @Test func touchedIsWhatWasWrittenSinceStored() {
        var pending = PendingSends([[1]: (1, 10), [2]: (1, 20)])
        #expect(pending.touched.isEmpty)
        pending[[3]] = (2, 30)
        pending[[1]] = nil
        #expect(pending.touched == [[3], [1]])
        pending.markStored()
        #expect(pending.touched.isEmpty && pending.count == 2)
    }
}
