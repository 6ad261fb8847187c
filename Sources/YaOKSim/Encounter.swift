/// One contact between two nodes: a link is up from `start` to `end` (seconds from the
/// start of the run) and carries at most `bandwidth` bytes per second each way. What an
/// encounter can carry is `capacity`: a short Bluetooth meeting carries little.
public struct Encounter: Sendable, Equatable {
    public var a: Int
    public var b: Int
    public var start: Double
    public var end: Double
    /// Bytes per second in each direction.
    public var bandwidth: Double

    public init(a: Int, b: Int, start: Double, end: Double, bandwidth: Double) {
        self.a = min(a, b)
        self.b = max(a, b)
        self.start = start
        self.end = end
        self.bandwidth = bandwidth
    }

    public var duration: Double { end - start }
    /// Bytes the encounter carries each way.
    public var capacity: Int { Int((duration * bandwidth).rounded(.down)) }
}

/// An unordered pair of node ids (a < b): two people who meet, or who are contacts.
public struct NodePair: Hashable, Sendable {
    public let a: Int, b: Int
    public init(_ x: Int, _ y: Int) {
        a = min(x, y)
        b = max(x, y)
    }
}
