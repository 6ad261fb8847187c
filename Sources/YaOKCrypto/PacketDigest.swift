import YaOKSupport
import YaOKWire

/// What duplicate detection is keyed on (docs/PROTOCOL.md §4.8): BLAKE2b-128 over the
/// packet without its hop limit — the header's authenticated bytes and the payload, which
/// the sender authenticated end to end. Keying on the message ID alone let anyone who saw
/// an ID inject junk under it, so that the genuine packet was dropped as a duplicate.
public struct PacketDigest: Hashable, Sendable {
    public let value: MessageID

    public static func of(_ header: RoutedHeader, payload: [UInt8]) -> PacketDigest {
        let input = header.authenticatedBytes(payloadLength: payload.count) + payload
        let hash = Sodium.blake2b(input, key: Array("YaOK-digest-v1".utf8), outputLength: MessageID.length)
        // 16 bytes by construction: MessageID(bytes:) cannot fail here.
        return PacketDigest(value: (try? MessageID(bytes: hash)) ?? MessageID(high: 0, low: 0))
    }

    public var bytes: [UInt8] { value.bytes }
}
