/// When a failed message is tried again (US-022): after 1 minute, 5, 15, then every hour
/// until it expires. A new link to the recipient, or a manual retry, sends it at once.
public enum RetrySchedule {
    public static let delaysMs: [Int64] = [60_000, 300_000, 900_000, 3_600_000]

    /// The wait after the `attempts`th failed attempt (attempts ≥ 1).
    public static func delay(afterAttempts attempts: Int) -> Int64 {
        delaysMs[min(max(attempts, 1), delaysMs.count) - 1]
    }

    /// How long a link has to confirm receipt of a packet before the attempt counts as failed.
    public static let attemptTimeoutMs: Int64 = 30_000
}
