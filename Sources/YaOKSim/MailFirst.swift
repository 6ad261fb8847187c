/// A copy in a packet model's store: all the shared meeting pass needs is when it expires.
protocol ExpiringCopy {
    var expires: Double { get }
}

/// The start of a meeting that every packet router shares: `x` drops what expired, hands `y`
/// the mail addressed to `y` (oldest message first; `y` refuses what it has seen, as the
/// ONE's routers do), and lists what `y` lacks for the router's own policy to judge.
///
/// One pass over `x`'s store; only the two short lists are sorted, so a meeting costs
/// O(store) once stores are alike. Returns nil when the encounter's capacity ran out while
/// mail was handed (nothing more goes over it).
func mailFirst<Copy: ExpiringCopy>(from x: Int, to y: Int, over e: ActiveEncounter, run: RunContext,
                                   stores: inout [[Int: Copy]], seen: inout [Set<Int>],
                                   delivered: (Int) -> Void = { _ in }) -> [Int]? {
    let now = run.now
    let messages = run.workload.messages
    var expired: [Int] = [], forY: [Int] = [], lacking: [Int] = []
    for (id, copy) in stores[x] {
        if copy.expires <= now { expired.append(id) }
        else if seen[y].contains(id) { continue }
        else if messages[id].to == y { forY.append(id) }
        else { lacking.append(id) }
    }
    for id in expired { stores[x][id] = nil }
    for id in forY.sorted() {
        let m = messages[id]
        guard let arrival = e.transfer(m.wireBytes, from: x, now: now) else { return nil }
        run.recorder.relayed(m, from: x, to: y, at: arrival, bytes: m.wireBytes)
        run.recorder.delivered(m, at: arrival)
        delivered(id)
        stores[x][id] = nil
        seen[y].insert(id)
    }
    return lacking.sorted()
}
