import Testing
@testable import YaOKSupport
@testable import YaOKCrypto
@testable import YaOKStore

/// The ring state's encoding (Store+ReceiverKeys) in the form written before migration 18,
/// which still reads: pending entries in message-ID byte order whatever the dictionary's
/// order, so equal rings encode alike, and a decode gives the ring back; a count that the
/// bytes cannot hold is refused before anything is reserved. Since migration 18 the entries
/// are rows of their own and the state written holds none (the count is 0).
@Suite struct RingStateCodingTests {
    @Test func pendingEntriesAreInByteOrderAndRoundTrip() throws {
        var random = SplitMix(seed: 7)
        var pending: [[UInt8]: (keyID: UInt32, expiresMs: Int64)] = [:]
        for i in 0..<500 {
            // IDs sharing long prefixes too, so the order is decided past the first 8 bytes.
            var id = (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if i % 3 == 0 { id.replaceSubrange(0..<12, with: [UInt8](repeating: 0xAB, count: 12)) }
            pending[id] = (UInt32(i), Int64(i) * 1_000)
        }
        let ring = ReceiverKeyRing(own: [], lastID: 9, peerKey: nil, pending: pending, releasedPeer: 3)
        #expect(Store.encodeRingState(ring).suffix(4) == [0, 0, 0, 0])
        let bytes = Store.encodeRingState(ring, pending: pending)
        var expected = [UInt8]()
        for (id, entry) in pending.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            expected += id + entry.keyID.bigEndianBytes + entry.expiresMs.bigEndianBytes
        }
        #expect(Array(bytes.suffix(expected.count)) == expected)
        let back = try Store.decodeRingState(bytes[...], own: [])
        #expect(back.lastID == 9 && back.releasedPeer == 3 && back.pending.count == 500)
        #expect(back.pending.allSatisfy { pending[$0.key]?.keyID == $0.value.keyID && pending[$0.key]?.expiresMs == $0.value.expiresMs })
    }

    @Test func aCountTheBytesCannotHoldIsRefused() {
        let ring = ReceiverKeyRing(own: [], lastID: 1, peerKey: nil, pending: [:], releasedPeer: 0)
        var bytes = Store.encodeRingState(ring)
        bytes.replaceSubrange((bytes.count - 4)..., with: UInt32.max.bigEndianBytes)
        #expect(throws: (any Error).self) { try Store.decodeRingState(bytes[...], own: []) }
    }
}

/// A small deterministic generator for the test's IDs.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
