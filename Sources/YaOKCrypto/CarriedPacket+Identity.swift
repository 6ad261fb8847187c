import YaOKSupport
import YaOKWire

extension CarriedPacket {
    /// What carriers reconcile on (docs/PROTOCOL.md §10.2): BLAKE2b-128 keyed
    /// "YaOK-carried-id-v1" over the packet without hop limit and copy budget — the bytes
    /// the sender sealed, which carriers cannot change. Nothing in it is derived from the
    /// sender, the recipient or the inner message ID: the payload begins with a fresh
    /// ephemeral key, so sealing the same message again gives another identity.
    public var identity: [UInt8] {
        Sodium.blake2b([authenticatedHeader[...], payload[...]], key: Self.identityKey, outputLength: 16)
    }

    static let identityKey = Array("YaOK-carried-id-v1".utf8)
}
