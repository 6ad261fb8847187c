@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// SplitMix64: a seeded generator so that every "random" property test is reproducible
/// (the seed is in the test), while still covering many shapes.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

extension RandomNumberGenerator {
    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}

/// The error code a throwing expression produced, or nil if it did not throw a YaOKError.
func errorCode<T>(_ body: () throws -> T) -> YaOKError.Code? {
    do {
        _ = try body()
        return nil
    } catch let error as YaOKError {
        return error.code
    } catch {
        return nil
    }
}

func sampleHeader(type: PacketType = .message, hop: UInt8 = 7) throws -> RoutedHeader {
    try RoutedHeader(type: type, hopLimit: hop, messageID: MessageID(high: 0x0011_2233_4455_6677, low: 0x8899_aabb_ccdd_eeff),
                     createdMs: 1_700_000_000_000, lifetimeMinutes: 10_080, routingTag: RoutingTag(value: 0x0102_0304_0506_0708))
}
