/// Reads the ONE simulator's connection events (its StandardEventsReader format, as its
/// external-events files and many published traces converted for it use):
///
///     <time> CONN <host a> <host b> up|down [<interface>]
///
/// one event a line; time in seconds (decimal allowed), hosts as non-negative integers
/// (the ONE's host addresses, used as node ids). Blank lines and lines starting with `#` are
/// skipped. Each `up` opens an encounter that the pair's next `down` closes; one still up at
/// the end lasts until the end of the run. Anything else (another event type, a `down`
/// without an `up`, a second `up`, time going backwards) is refused with its line number.
public enum ONEConnectionImporter {
    public static func plan(text: String, name: String = "one", bandwidth: Double = Defaults.bandwidth,
                            duration: Double? = nil) throws -> ContactPlan {
        var open: [NodePair: Double] = [:]
        var encounters: [Encounter] = []
        var lastTime = 0.0
        var maxNode = -1
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = index + 1
            let fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if fields.isEmpty || fields[0].hasPrefix("#") { continue }
            func fail(_ why: String) -> SimError { SimError("Line \(line): \(why): \"\(raw.prefix(80))\"") }
            guard fields.count == 5 || fields.count == 6 else {
                throw fail("expected \"<time> CONN <a> <b> up|down\", got \(fields.count) fields")
            }
            guard let time = Double(fields[0]), time.isFinite, time >= 0 else { throw fail("the time is not a non-negative number") }
            guard fields[1] == "CONN" else { throw fail("only CONN events are read, not \(fields[1])") }
            guard let a = Int(fields[2]), let b = Int(fields[3]), a >= 0, b >= 0 else {
                throw fail("hosts must be non-negative integers")
            }
            guard a != b else { throw fail("host \(a) connects to itself") }
            guard a <= ImportLimits.maxNodeID, b <= ImportLimits.maxNodeID else { throw fail("host id above \(ImportLimits.maxNodeID)") }
            guard time >= lastTime else { throw fail("time goes backwards (\(time) after \(lastTime))") }
            lastTime = time
            maxNode = max(maxNode, a, b)
            let pair = NodePair(a, b)
            switch fields[4] {
            case "up":
                guard open[pair] == nil else { throw fail("\(a)–\(b) is already up") }
                open[pair] = time
            case "down":
                guard let start = open.removeValue(forKey: pair) else { throw fail("\(a)–\(b) goes down without having come up") }
                if time > start { encounters.append(Encounter(a: a, b: b, start: start, end: time, bandwidth: bandwidth)) }
            default:
                throw fail("the state must be up or down, not \(fields[4])")
            }
            guard encounters.count <= ImportLimits.maxEncounters else { throw fail("more than \(ImportLimits.maxEncounters) encounters") }
        }
        let end = duration ?? max(lastTime, 1)
        for (pair, start) in open.sorted(by: { ($0.key.a, $0.key.b) < ($1.key.a, $1.key.b) }) where start < end {
            encounters.append(Encounter(a: pair.a, b: pair.b, start: start, end: end, bandwidth: bandwidth))
        }
        guard maxNode >= 1 else { throw SimError("No connection events in the file") }
        return try ContactPlan(name: name, nodeCount: maxNode + 1, duration: end, encounters: encounters.filter { $0.start < end })
    }
}

/// Bounds on what an imported file may ask for, so a hostile or mistaken file fails with a
/// message instead of allocating without end.
enum ImportLimits {
    static let maxNodeID = 100_000
    static let maxEncounters = 5_000_000
}
