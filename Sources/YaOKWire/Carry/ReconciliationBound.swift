/// The upper end of a range (exclusive): an expiry and the shortest id prefix that
/// separates the range's last item from the next one (omitted bytes are zero). The
/// universe runs from `zero` (inclusive) to `infinity`. Pure Swift (fuzz build).
public struct ReconciliationBound: Hashable, Sendable, CustomStringConvertible {
    public let expiry: UInt64
    /// At most the id length; never ends in a zero byte (it would equal the shorter
    /// prefix, and the encoding must be canonical).
    public let prefix: [UInt8]

    public static let zero = ReconciliationBound(expiry: 0, prefix: [])
    public static let infinity = ReconciliationBound(expiry: UInt64.max, prefix: [])

    public init(expiry: UInt64, prefix: [UInt8]) {
        self.expiry = expiry
        self.prefix = prefix
    }

    public var isInfinity: Bool { expiry == UInt64.max }

    /// The shortest bound `b` with `previous < b <= next` (for `previous < next`).
    static func between(_ previous: ReconciliationItem, _ next: ReconciliationItem) -> ReconciliationBound {
        guard previous.expiry == next.expiry else { return ReconciliationBound(expiry: next.expiry, prefix: []) }
        var shared = 0
        while shared < next.id.count, previous.id[shared] == next.id[shared] { shared += 1 }
        return ReconciliationBound(expiry: next.expiry, prefix: Array(next.id.prefix(shared + 1)))
    }

    /// Whether `item` sorts before this bound (so lies in a range that this bound ends).
    func isAbove(_ item: ReconciliationItem) -> Bool {
        if item.expiry != expiry { return item.expiry < expiry }
        // Compare the id with the prefix padded by zeros to the id's length.
        for i in 0..<item.id.count {
            let p: UInt8 = i < prefix.count ? prefix[i] : 0
            if item.id[i] != p { return item.id[i] < p }
        }
        return false  // equal: the bound is inclusive below, so the item is not below it
    }

    /// Strict order of bounds, for the decoder's "ascending" rule.
    static func < (a: ReconciliationBound, b: ReconciliationBound) -> Bool {
        if a.expiry != b.expiry { return a.expiry < b.expiry }
        let n = max(a.prefix.count, b.prefix.count)
        for i in 0..<n {
            let x: UInt8 = i < a.prefix.count ? a.prefix[i] : 0
            let y: UInt8 = i < b.prefix.count ? b.prefix[i] : 0
            if x != y { return x < y }
        }
        return false
    }

    public var description: String {
        isInfinity ? "∞" : "\(expiry)/" + prefix.map { String($0, radix: 16) }.joined()
    }
}
