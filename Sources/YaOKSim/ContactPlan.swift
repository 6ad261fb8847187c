/// Who meets whom and when, for a whole run: the input every router sees.
public struct ContactPlan: Sendable, Equatable {
    public let name: String
    public let nodeCount: Int
    /// Seconds simulated.
    public let duration: Double
    /// Sorted by start, then by the pair: the order the simulation opens them in.
    public let encounters: [Encounter]

    /// Refuses encounters outside the run, of a node with itself, or with a node id out of
    /// range; sorts the rest.
    public init(name: String, nodeCount: Int, duration: Double, encounters: [Encounter]) throws {
        guard nodeCount >= 2 else { throw SimError("A contact plan needs at least 2 nodes (got \(nodeCount))") }
        guard duration > 0 else { throw SimError("A contact plan must last longer than 0 seconds") }
        for (i, e) in encounters.enumerated() {
            guard e.a != e.b else { throw SimError("Encounter \(i + 1): node \(e.a) meets itself") }
            guard e.a >= 0, e.b < nodeCount else { throw SimError("Encounter \(i + 1): node out of range 0..<\(nodeCount)") }
            guard e.start >= 0, e.end > e.start, e.start < duration else {
                throw SimError("Encounter \(i + 1): times \(e.start)–\(e.end) outside the run of \(duration) s")
            }
            guard e.bandwidth > 0 else { throw SimError("Encounter \(i + 1): bandwidth must be positive") }
        }
        self.name = name
        self.nodeCount = nodeCount
        self.duration = duration
        self.encounters = ContactPlan.merged(encounters.map { e in
            var e = e
            e.end = min(e.end, duration)
            return e
        })
    }

    /// Two encounters of one pair that overlap (a trace that lists a contact per radio, or
    /// per scan) are one link: merged, the faster bandwidth kept. Sorted by start, then pair.
    static func merged(_ encounters: [Encounter]) -> [Encounter] {
        let byPair = encounters.sorted { ($0.a, $0.b, $0.start, $0.end) < ($1.a, $1.b, $1.start, $1.end) }
        var out: [Encounter] = []
        for e in byPair {
            if var last = out.last, last.a == e.a, last.b == e.b, e.start <= last.end {
                last.end = max(last.end, e.end)
                last.bandwidth = max(last.bandwidth, e.bandwidth)
                out[out.count - 1] = last
            } else {
                out.append(e)
            }
        }
        return out.sorted { ($0.start, $0.a, $0.b, $0.end) < ($1.start, $1.a, $1.b, $1.end) }
    }

    /// Contacts per node per day, for the summary line.
    public var contactsPerNodePerDay: Double {
        Double(encounters.count * 2) / Double(nodeCount) / (duration / 86_400)
    }
}
