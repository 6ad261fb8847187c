import YaOKSupport

/// Hop-limit policy (docs/PROTOCOL.md §4.4). The hop limit is outside the authenticated
/// bytes because every forwarder rewrites it. Pure Swift (fuzz build).
public enum HopLimit {
    /// The originator picks its first hop limit uniformly from this range, so that a
    /// neighbour cannot conclude "hop limit is N, so the sender is my neighbour".
    public static let initialRange: ClosedRange<UInt8> = 6...10
    /// Forwarders clamp anything larger to this (a peer cannot buy extra reach).
    public static var maximum: UInt8 { initialRange.upperBound }
    /// How far ahead of our clock a packet's creation time may be before we drop it.
    public static let defaultMaxClockSkewMs: Int64 = 15 * 60_000

    public static func initial<R: RandomNumberGenerator>(using rng: inout R) -> UInt8 {
        UInt8.random(in: initialRange, using: &rng)
    }

    public static func initial() -> UInt8 {
        var rng = SystemRandomNumberGenerator()
        return initial(using: &rng)
    }

    /// The hop limit to forward with, or nil when the packet must not be forwarded (0).
    /// At the maximum a forwarder keeps the value with probability 1/2 instead of
    /// decrementing (as Freenet does with its HTL): otherwise a packet arriving with the
    /// maximum could only have come straight from its originator.
    public static func forwarded<R: RandomNumberGenerator>(_ hopLimit: UInt8, using rng: inout R) -> UInt8? {
        guard hopLimit > 0 else { return nil }
        let clamped = min(hopLimit, maximum)
        if clamped == maximum, Bool.random(using: &rng) { return clamped }
        return clamped - 1
    }

    /// Rewrites the hop limit of an encoded routed packet in place (no re-encoding, the
    /// authenticated bytes are untouched). Returns false, changing nothing, if the packet
    /// must not be forwarded, is not a routed packet, or is malformed (the strict parse of
    /// §4.1: a forwarder passes on only what a receiver would accept).
    public static func rewriteForForwarding<R: RandomNumberGenerator>(_ packet: inout [UInt8], using rng: inout R) -> Bool {
        guard (try? RoutedHeader.parse(packet)) != nil,
              let next = forwarded(packet[RoutedHeader.hopLimitOffset], using: &rng) else { return false }
        packet[RoutedHeader.hopLimitOffset] = next
        return true
    }
}
