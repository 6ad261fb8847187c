import YaOKSupport

/// One side's store as reconciliation reads it: its items sorted by (expiry, id), with
/// running sums of the ids so that any range's fingerprint costs one subtraction and one
/// hash, whatever the range's size. Built once per encounter (O(N log N)); every lookup
/// after that is a binary search. Pure Swift (fuzz build).
public struct ReconciliationSet: Sendable {
    public let idLength: Int
    public let items: [ReconciliationItem]
    /// sums[i] = the first i ids added as little-endian integers modulo 2^(8·idLength),
    /// as idLength/8 little-endian 64-bit limbs each: sums[i*limbs ..< (i+1)*limbs].
    private let sums: [UInt64]
    private let ids: Set<[UInt8]>
    private var limbs: Int { idLength / 8 }

    /// Throws `invalidArgument` if an item's id is not `idLength` bytes; duplicates are
    /// kept once.
    public init(_ items: [ReconciliationItem], idLength: Int) throws {
        guard ReconciliationParameters.allowedIDLengths.contains(idLength) else {
            throw YaOKError(.invalidArgument, "Reconciliation id length must be 16 or 32 bytes, got \(idLength)")
        }
        for item in items where item.id.count != idLength {
            throw YaOKError(.invalidArgument, "Reconciliation item id must be \(idLength) bytes, got \(item.id.count)")
        }
        var sorted = items.sorted()
        var unique: [ReconciliationItem] = []
        unique.reserveCapacity(sorted.count)
        for item in sorted where unique.last != item { unique.append(item) }
        sorted = unique
        let limbs = idLength / 8
        var sums = [UInt64](repeating: 0, count: (sorted.count + 1) * limbs)
        for (i, item) in sorted.enumerated() {
            var carry: UInt64 = 0
            for k in 0..<limbs {
                var limb: UInt64 = 0
                for b in 0..<8 { limb |= UInt64(item.id[8 * k + b]) << (8 * UInt64(b)) }
                let (s1, o1) = sums[i * limbs + k].addingReportingOverflow(limb)
                let (s2, o2) = s1.addingReportingOverflow(carry)
                sums[(i + 1) * limbs + k] = s2
                carry = (o1 ? 1 : 0) + (o2 ? 1 : 0)
            }
        }
        self.idLength = idLength
        self.items = sorted
        self.sums = sums
        self.ids = Set(sorted.map(\.id))
    }

    public var count: Int { items.count }

    public func contains(id: [UInt8]) -> Bool { ids.contains(id) }

    /// The first index at or after `from` whose item is not below `bound`.
    func lowerBound(_ bound: ReconciliationBound, from: Int) -> Int {
        if bound.isInfinity { return items.count }
        var lo = from, hi = items.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if bound.isAbove(items[mid]) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The fingerprint of items[lo..<hi]: hash(sum of ids, little-endian, idLength bytes ||
    /// count as 8 bytes big-endian).
    func fingerprint(_ lo: Int, _ hi: Int, hash: any ReconciliationHash) -> [UInt8] {
        var input: [UInt8] = []
        input.reserveCapacity(idLength + 8)
        var borrow: UInt64 = 0
        for k in 0..<limbs {
            let (d1, o1) = sums[hi * limbs + k].subtractingReportingOverflow(sums[lo * limbs + k])
            let (d2, o2) = d1.subtractingReportingOverflow(borrow)
            borrow = (o1 ? 1 : 0) + (o2 ? 1 : 0)
            for b in 0..<8 { input.append(UInt8(truncatingIfNeeded: d2 >> (8 * UInt64(b)))) }
        }
        input.appendBigEndian(UInt64(hi - lo), count: 8)
        return hash.fingerprint(input)
    }
}
