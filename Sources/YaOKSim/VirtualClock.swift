import Synchronization

/// Simulated time in milliseconds since 1970, shared by every real node of a run (their
/// `Node.Options.clock`). Only the simulation loop moves it, and only between events, while
/// no link is open, so a node never sees time move inside one exchange.
public final class VirtualClock: Sendable {
    /// 2030-01-01T00:00:00Z: a fixed origin, so stored times (and the hash) never depend on
    /// when the run happened.
    public static let origin: Int64 = 1_893_456_000_000
    private let ms = Atomic<Int64>(VirtualClock.origin)

    public init() {}

    /// Milliseconds since 1970.
    public var now: Int64 { ms.load(ordering: .acquiring) }

    /// Sets the time to `origin + seconds` (never backwards).
    public func set(seconds: Double) {
        let target = VirtualClock.origin + Int64((seconds * 1000).rounded())
        if target > now { ms.store(target, ordering: .releasing) }
    }

    public var function: @Sendable () -> Int64 { { [self] in self.now } }
}
