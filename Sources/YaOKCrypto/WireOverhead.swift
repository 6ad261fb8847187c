import YaOKSupport
import YaOKWire

/// Per-message overhead on the wire, before padding: what a message costs beyond its
/// (padded) body. Reported by the benchmark and checked by the tests.
public enum WireOverhead {
    /// Stream frame prefix + routed header + packet envelope (ephemeral key, sender MAC,
    /// AEAD tag): 2 + 37 + 64 = 103 bytes.
    public static var perMessageOnStream: Int { Frame.prefixLength + RoutedHeader.length + PacketEnvelope.overhead }

    /// The same on a fragmenting link, without the stream prefix but with a fragment header
    /// per link unit: 37 + 64 + 8 × fragments.
    public static func perMessage(paddedBodyLength: Int, mtu: Int) -> Int {
        let fixed = RoutedHeader.length + PacketEnvelope.overhead
        let packet = fixed + paddedBodyLength
        guard packet > mtu else { return fixed }
        let chunk = mtu - Fragment.headerLength
        let fragments = (packet + chunk - 1) / chunk
        return fixed + fragments * Fragment.headerLength
    }
}
