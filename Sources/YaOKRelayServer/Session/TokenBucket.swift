/// A token bucket that carries debt: credit refills at `rate` a second up to `burst`;
/// spending may take it below zero, and nothing more is allowed until it has refilled
/// past zero (so work done past the budget is paid back, not forgotten when a window
/// turns). Times are monotonic nanoseconds given by the caller (tests pass their own).
struct TokenBucket {
    let rate: Double
    let burst: Double
    private var credit: Double
    private var at: UInt64

    init(rate: Double, burst: Double, now: UInt64) {
        self.rate = rate
        self.burst = burst
        credit = burst
        at = now
    }

    /// The credit at `now` (negative: in debt).
    mutating func available(now: UInt64) -> Double {
        if now > at {
            credit = min(burst, credit + Double(now - at) / 1e9 * rate)
            at = now
        }
        return credit
    }

    /// Whether there is credit left at `now`.
    mutating func allows(now: UInt64) -> Bool { available(now: now) > 0 }

    mutating func spend(_ n: Int, now: UInt64) {
        credit = available(now: now) - Double(n)
    }

    /// Seconds until the credit is positive again (0 if it is).
    func secondsToCredit() -> Double { credit > 0 ? 0 : (-credit + 1) / rate }
}
