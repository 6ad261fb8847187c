/// Reads a Haggle / CRAWDAD `contacts.dat` (cambridge/haggle: the Infocom 2005 and 2006,
/// Cambridge and Intel iMote traces): one contact a line, whitespace-separated,
///
///     <id a> <id b> <start> <end> [<contact number> <time since the previous contact>]
///
/// ids positive integers (the iMote numbers; external devices have large ones), times in
/// seconds since the start of the experiment. The trailing columns are ignored. The ids
/// found are numbered 0… in ascending order (the plan's node ids). A contact seen in a
/// single scan has start = end: it is given `minimumDuration` (the iMotes scanned every
/// 120 s, so it lasted at least a moment). Blank lines and `#` comments are skipped;
/// anything else malformed is refused with its line number.
public enum HaggleImporter {
    public static let minimumDuration = 1.0

    public static func plan(text: String, name: String = "haggle", bandwidth: Double = Defaults.bandwidth,
                            duration: Double? = nil) throws -> ContactPlan {
        var raw: [(a: Int, b: Int, start: Double, end: Double)] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = index + 1
            let fields = rawLine.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if fields.isEmpty || fields[0].hasPrefix("#") { continue }
            func fail(_ why: String) -> SimError { SimError("Line \(line): \(why): \"\(rawLine.prefix(80))\"") }
            guard fields.count >= 4, fields.count <= 6 else {
                throw fail("expected \"<id a> <id b> <start> <end> [<n> <gap>]\", got \(fields.count) fields")
            }
            guard let a = Int(fields[0]), let b = Int(fields[1]), a >= 1, b >= 1 else { throw fail("ids must be positive integers") }
            guard a != b else { throw fail("node \(a) meets itself") }
            guard a <= ImportLimits.maxNodeID, b <= ImportLimits.maxNodeID else { throw fail("id above \(ImportLimits.maxNodeID)") }
            guard let start = Double(fields[2]), let end = Double(fields[3]), start.isFinite, end.isFinite, start >= 0 else {
                throw fail("start and end must be non-negative numbers")
            }
            guard end >= start else { throw fail("the contact ends (\(end)) before it starts (\(start))") }
            for extra in fields.dropFirst(4) where Double(extra) == nil { throw fail("\(extra) is not a number") }
            raw.append((a, b, start, end))
            guard raw.count <= ImportLimits.maxEncounters else { throw fail("more than \(ImportLimits.maxEncounters) contacts") }
        }
        guard !raw.isEmpty else { throw SimError("No contacts in the file") }
        let ids = Set(raw.flatMap { [$0.a, $0.b] }).sorted()
        let index = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, $0) })
        let end = duration ?? max(raw.map { max($0.end, $0.start + minimumDuration) }.max() ?? 1, 1)
        let encounters = raw.compactMap { c -> Encounter? in
            guard c.start < end, let a = index[c.a], let b = index[c.b] else { return nil }
            return Encounter(a: a, b: b, start: c.start, end: min(max(c.end, c.start + minimumDuration), end), bandwidth: bandwidth)
        }
        return try ContactPlan(name: name, nodeCount: ids.count, duration: end, encounters: encounters)
    }
}
