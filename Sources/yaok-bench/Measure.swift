import Foundation
import Glibc

/// Monotonic time and a few reporting helpers shared by all suites.
enum Measure {
    /// Where the suites keep their stores: YAOK_BENCH_DIR (e.g. /dev/shm, a tmpfs, to take
    /// the disk's sync out of the figures), else /tmp. Printed at the start of a run.
    static let scratchDirectory: String = {
        guard let dir = getenv("YAOK_BENCH_DIR"), let path = String(validatingCString: dir), !path.isEmpty else { return "/tmp" }
        return path
    }()

    /// YAOK_BENCH_FORWARD_SECRECY=0: the nodes of the delivery and LAN suites run with
    /// forward secrecy off (`Node.Options.forwardSecrecy`), to show what its key ring costs
    /// a message. On by default, as in production.
    static let forwardSecrecy: Bool = {
        guard let value = getenv("YAOK_BENCH_FORWARD_SECRECY") else { return true }
        return String(cString: value) != "0"
    }()

    /// YAOK_BENCH_CARRY=off: the nodes set up by the delivery and LAN suites carry nothing
    /// (`Node.setCarry(mode: .off)`: no own carried copies, no meetings), to show what
    /// carrying costs a message. On (the default mode) otherwise, as in production.
    static let carryOff: Bool = getenv("YAOK_BENCH_CARRY").map { String(cString: $0) == "off" } ?? false

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// CPU seconds this process used so far, every thread's, user and system
    /// (CLOCK_PROCESS_CPUTIME_ID): over a run, against its wall time, how many cores it kept busy.
    static func cpuSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// CPU seconds the calling thread used so far, user and system (CLOCK_THREAD_CPUTIME_ID):
    /// a call's own work, without the time it waited (for the disk, a lock) or others' work.
    static func threadCPUSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Runs `body(k)` for k in 0..<count, each on a thread of its own, all at once, and
    /// returns when every one has. (`DispatchQueue.concurrentPerform` runs at most as many at
    /// once as there are cores: its "4 threads" were 2 on this 2-core machine, each sending
    /// twice as long, so the group commit never saw more than 2 senders.)
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let done = DispatchGroup()
        let threads = (0..<count).map { k in
            done.enter()
            return Thread { body(k); done.leave() }
        }
        threads.forEach { $0.start() }
        done.wait()
    }

    /// Runs `body` `iterations` times (after a short warm-up) and returns seconds per iteration.
    @discardableResult
    static func perIteration(_ iterations: Int, warmup: Int = 10, _ body: () throws -> Void) rethrows -> Double {
        for _ in 0..<warmup { try body() }
        let start = now()
        for _ in 0..<iterations { try body() }
        return (now() - start) / Double(iterations)
    }

    /// Peak resident set size of this process image, in MiB: VmHWM from /proc/self/status.
    /// (getrusage's ru_maxrss survives execve, so under `swift run` it would report the
    /// peak of swift-run itself.)
    static func peakRSSMiB() -> Double {
        guard let file = fopen("/proc/self/status", "r") else { return 0 }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>? = nil
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0 {
            guard let line, let text = String(validatingCString: line), text.hasPrefix("VmHWM:") else { continue }
            return (Double(text.filter(\.isNumber)) ?? 0) / 1024
        }
        return 0
    }

    static func report(_ label: String, _ value: String, target: String? = nil) {
        let padded = label.padding(to: 44)
        print("  \(padded) \(value)" + (target.map { "   (target \($0))" } ?? ""))
    }

    /// Seconds as milliseconds with three decimals: "2.619 ms".
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// Removes a benchmark's store directory and all it holds (the database, its -wal and
    /// -shm, and the store's lock file, which stayed behind in /tmp when only the database
    /// files were unlinked).
    static func removeStore(_ dir: String) {
        _ = system("rm -rf '\(dir)'")
    }

    static func ms(_ seconds: Double) -> String { format(seconds * 1000, decimals: 3) + " ms" }

    static func format(_ value: Double, decimals: Int = 2) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        return "\(rounded)"
    }
}

extension String {
    func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
