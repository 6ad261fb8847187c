@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

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
