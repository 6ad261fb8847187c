import YaOKSupport
import YaOKWire

/// The routing tag of a carried packet (docs/PROTOCOL.md §10.3): the pair key of §4.3 (so
/// computable by the two contacts only) over an input that starts with the carried type
/// byte, so that it never equals the pair's §4.3 tag of the same day (a carried copy is
/// not linkable to a direct one by its tag), and rotating with the UTC day of the expiry:
///
///     tag = BLAKE2b-64(key = pair_key; 0x06 || S || R || epoch (u32 BE)),  epoch = ⌊expiry_hour / 24⌋
extension RoutePair {
    /// The tag of what we send the peer in a carried packet whose expiry falls on `epoch`.
    public func carriedOutgoingTag(epoch: UInt32) -> RoutingTag {
        Self.carriedTag(pairKey: pairKey, senderKey: ownKey, recipientKey: peerKey, epoch: epoch)
    }

    /// The tag of what the peer sends us, for `epoch`.
    public func carriedIncomingTag(epoch: UInt32) -> RoutingTag {
        Self.carriedTag(pairKey: pairKey, senderKey: peerKey, recipientKey: ownKey, epoch: epoch)
    }

    static func carriedTag(pairKey: SecureBytes, senderKey: [UInt8], recipientKey: [UInt8], epoch: UInt32) -> RoutingTag {
        var input: [UInt8] = [CarriedPacket.type]
        input.reserveCapacity(69)
        input += senderKey
        input += recipientKey
        input.appendBigEndian(UInt64(epoch), count: 4)
        let bytes = pairKey.withUnsafeBytes { key in
            input.withUnsafeBytes { Sodium.blake2b(parts: [$0], key: key, outputLength: RoutingTag.length) }
        }
        // 8 bytes, always: the initializer cannot fail.
        return (try? RoutingTag(bytes: bytes)) ?? RoutingTag(value: 0)
    }
}
