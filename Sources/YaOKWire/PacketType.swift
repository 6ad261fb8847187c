import YaOKSupport

/// The first two bytes of every packet: the protocol version, then the packet type.
/// docs/PROTOCOL.md §4.1. Pure Swift (fuzz build).
public enum Wire {
    /// The only version this implementation reads or writes. Any other → `unsupportedVersion`.
    public static let version: UInt8 = 1

    /// The largest encoded packet (header included) in bytes. The largest real packet is a
    /// message with a 10 KiB body: 37 (header) + 104 (envelope overhead) + 16384 (padding
    /// bucket) = 16525; the limit leaves room without letting a peer make us hold 64 KiB.
    public static let maxPacketLength = 17 * 1024
}

public enum PacketType: UInt8, Sendable, CaseIterable {
    /// An end-to-end message: the payload is `Envelope.seal` output. Routed.
    case message = 0x01
    /// A delivery acknowledgement travelling back to the sender. Routed.
    case ack = 0x02
    /// Link-local handshake between two neighbours; never forwarded.
    case handshake = 0x03
    /// A piece of a larger packet on a small-MTU link; never forwarded as such.
    case fragment = 0x04
    /// One encrypted packet of a link between two neighbours (docs/PROTOCOL.md §5.3): the
    /// routed packets, receipts and keepalives they exchange. Link-local: never forwarded.
    case link = 0x05

    /// Message and ack packets carry the routed header (ID, times, hop limit, routing tag).
    public var isRouted: Bool { self == .message || self == .ack }
}
