import ArgumentParser
import YaOK

/// `yaok run`'s carrying flags (docs/PROTOCOL.md §12): whose packets this peer carries for
/// others, and the carry store's caps. Given, they are stored (they stay for the next run);
/// not given, the stored setting stays (default: anyone, 2,000 packets, 32 MiB).
struct CarryOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Carry sealed packets for others: anyone, contacts (only on links with contacts) or off (deletes what is carried).",
                               valueName: "mode"))
    var carry: String?

    @Option(help: "The most carried packets kept (default 2000).")
    var carryMaxPackets: Int?

    @Option(help: "The most bytes of carried packets kept (default 33554432, 32 MiB).")
    var carryMaxBytes: Int?

    func validate() throws {
        if let carry, CarryMode(name: carry) == nil {
            throw ValidationError("--carry must be anyone, contacts or off, not '\(carry)'")
        }
        if let n = carryMaxPackets, !(1...CarryLimits.maxPacketsLimit).contains(n) {
            throw ValidationError("--carry-max-packets must be 1 to \(CarryLimits.maxPacketsLimit)")
        }
        if let n = carryMaxBytes, !(1...CarryLimits.maxBytesLimit).contains(n) {
            throw ValidationError("--carry-max-bytes must be 1 to \(CarryLimits.maxBytesLimit)")
        }
    }

    /// Applies the flags given to `node`; nothing when none was given. The node checks the
    /// lower byte bound (one packet of 17,408 bytes) and says so.
    func apply(to node: Node) throws {
        guard carry != nil || carryMaxPackets != nil || carryMaxBytes != nil else { return }
        let current = try node.carryStatistics()
        let mode = carry.flatMap { CarryMode(name: $0) } ?? current.mode
        var limits = current.limits
        if let n = carryMaxPackets { limits.maxPackets = n }
        if let n = carryMaxBytes { limits.maxBytes = n }
        try node.setCarry(mode: mode, limits: limits)
    }
}
