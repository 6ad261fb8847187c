import CSodium

/// Everything that happened in a run, one line per event in the order it happened, and its
/// SHA-256: the run's fingerprint. Two runs with the same plan, workload, router and seed
/// must give the same hash on any machine; times are whole milliseconds of simulated time and
/// messages are named by their index in the workload (never a random message ID), so the
/// hash depends on the simulated behaviour only.
public struct EventLog: Sendable {
    private var state = crypto_hash_sha256_state()
    public private(set) var count = 0
    /// The lines themselves, when asked for (`keepLines`): for a test or `--log`.
    public private(set) var lines: [String] = []
    let keepLines: Bool

    public init(keepLines: Bool = false) {
        self.keepLines = keepLines
        crypto_hash_sha256_init(&state)
    }

    public mutating func append(_ time: Double, _ text: String) {
        let line = "\(EventLog.milliseconds(time)) \(text)\n"
        let bytes = Array(line.utf8)
        crypto_hash_sha256_update(&state, bytes, UInt64(bytes.count))
        count += 1
        if keepLines { lines.append(line) }
    }

    /// The hash so far, in hex (the state is copied: more lines may follow).
    public var hash: String {
        var copy = state
        var out = [UInt8](repeating: 0, count: 32)
        crypto_hash_sha256_final(&copy, &out)
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: out.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    static func milliseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1000).rounded()) }
}
