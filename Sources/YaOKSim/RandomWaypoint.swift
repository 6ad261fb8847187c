/// Random waypoint (Johnson and Maltz; the ONE simulator's default movement): each person
/// walks at a random speed to a random point of a square, pauses, and walks on. Two people
/// are in contact while they are within `range` metres. The square grows with the number of
/// people (`areaPerNode`: 250,000 m², 100 people over 25 km² of a town), so density, and
/// with it the contact rate (about 25 meetings a person a day), stays the same at any scale. Positions are sampled every `step` seconds: a contact starts and ends on a step.
public struct RandomWaypoint: Sendable {
    public var nodes: Int
    public var days: Double
    /// Metres: Bluetooth LE in a pocket reaches a few tens of metres.
    public var range: Double = 30
    public var areaPerNode: Double = 250_000
    public var minSpeed: Double = 0.5
    public var maxSpeed: Double = 1.5
    public var maxPause: Double = 600
    public var step: Double = 10
    public var bandwidth: Double = Defaults.bandwidth

    public init(nodes: Int, days: Double) {
        self.nodes = nodes
        self.days = days
    }

    private struct Walker {
        var x, y, tx, ty, speed, pauseLeft: Double
    }

    public func plan(seed: UInt64) throws -> ContactPlan {
        var rng = SimRandom(seed: seed, stream: "waypoint")
        let side = (areaPerNode * Double(nodes)).squareRoot()
        let duration = days * 86_400
        func newTarget(_ w: inout Walker) {
            w.tx = rng.unit() * side
            w.ty = rng.unit() * side
            w.speed = minSpeed + rng.unit() * (maxSpeed - minSpeed)
        }
        func move(_ w: inout Walker) {
            var left = step
            while left > 0 {
                if w.pauseLeft > 0 {
                    let p = min(w.pauseLeft, left)
                    w.pauseLeft -= p
                    left -= p
                    if w.pauseLeft <= 0 { newTarget(&w) }
                    continue
                }
                let dx = w.tx - w.x, dy = w.ty - w.y
                let distance = (dx * dx + dy * dy).squareRoot()
                let reach = w.speed * left
                if reach >= distance {
                    w.x = w.tx
                    w.y = w.ty
                    left -= distance / w.speed
                    w.pauseLeft = rng.unit() * maxPause
                    if w.pauseLeft <= 0 { newTarget(&w) }
                } else {
                    w.x += dx / distance * reach
                    w.y += dy / distance * reach
                    left = 0
                }
            }
        }
        var walkers = (0..<nodes).map { _ in Walker(x: 0, y: 0, tx: 0, ty: 0, speed: 1, pauseLeft: 0) }
        for i in walkers.indices {
            walkers[i].x = rng.unit() * side
            walkers[i].y = rng.unit() * side
            newTarget(&walkers[i])
        }
        // A grid of cells at least one range wide: only neighbouring cells can hold a node in
        // range. No more cells than about 4 per node (a sparse town needs no finer grid).
        let cells = max(1, min(Int(side / range), 2 * Int(Double(nodes).squareRoot())))
        var upSince: [Int: Double] = [:]   // pair key a * nodes + b → start
        var encounters: [Encounter] = []
        var t = 0.0
        let r2 = range * range
        while t < duration {
            var grid = [[Int]](repeating: [], count: cells * cells)
            for (i, w) in walkers.enumerated() {
                let cx = min(cells - 1, Int(w.x / side * Double(cells))), cy = min(cells - 1, Int(w.y / side * Double(cells)))
                grid[cy * cells + cx].append(i)
            }
            var inRange = Set<Int>()
            for cy in 0..<cells {
                for cx in 0..<cells {
                    for a in grid[cy * cells + cx] {
                        for ny in max(0, cy - 1)...min(cells - 1, cy + 1) {
                            for nx in max(0, cx - 1)...min(cells - 1, cx + 1) {
                                for b in grid[ny * cells + nx] where b > a {
                                    let dx = walkers[a].x - walkers[b].x, dy = walkers[a].y - walkers[b].y
                                    if dx * dx + dy * dy <= r2 { inRange.insert(a * nodes + b) }
                                }
                            }
                        }
                    }
                }
            }
            for key in inRange where upSince[key] == nil { upSince[key] = t }
            // Sorted, so that the encounters come out in the same order on every run.
            for (key, start) in upSince.sorted(by: { $0.key < $1.key }) where !inRange.contains(key) {
                encounters.append(Encounter(a: key / nodes, b: key % nodes, start: start, end: t, bandwidth: bandwidth))
                upSince[key] = nil
            }
            for i in walkers.indices { move(&walkers[i]) }
            t += step
        }
        for (key, start) in upSince.sorted(by: { $0.key < $1.key }) {
            encounters.append(Encounter(a: key / nodes, b: key % nodes, start: start, end: duration, bandwidth: bandwidth))
        }
        return try ContactPlan(name: "waypoint", nodeCount: nodes, duration: duration, encounters: encounters)
    }
}
