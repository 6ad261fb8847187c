import YaOKSupport
import YaOKWire

/// Per-message overhead on the wire, before padding: what a message costs beyond its
/// (padded) body. Reported by the benchmark and checked by the tests.
public enum WireOverhead {
    /// Stream frame prefix + routed header + envelope (ephemeral key, hint, sender key,
    /// sender MAC, AEAD tag): 2 + 37 + 104 = 143 bytes.
    public static var perMessageOnStream: Int { Frame.prefixLength + RoutedHeader.length + Envelope.overhead }

    /// The same on a fragmenting link, without the stream prefix but with a fragment header
    /// per link unit: 37 + 104 + 8 × fragments.
    public static func perMessage(paddedBodyLength: Int, mtu: Int) -> Int {
        let packet = RoutedHeader.length + Envelope.overhead + paddedBodyLength
        guard packet > mtu else { return RoutedHeader.length + Envelope.overhead }
        let chunk = mtu - Fragment.headerLength
        let fragments = (packet + chunk - 1) / chunk
        return RoutedHeader.length + Envelope.overhead + fragments * Fragment.headerLength
    }
}
