import YaOKSupport

/// What every forward-secret message and every ack carries to the peer (docs/PROTOCOL.md
/// §13.2): the sender's newest receiver key for that peer, and `release`, the highest of the
/// peer's receiver key IDs under which everything the sender sealed is settled (acknowledged
/// or expired), so the peer may erase those keys at once. 40 bytes: key (36) || release (u32 BE).
public struct Announcement: Sendable, Equatable {
    public static let encodedLength = ReceiverKey.encodedLength + 4

    public let key: ReceiverKey
    /// 0: nothing released.
    public let release: UInt32

    public init(key: ReceiverKey, release: UInt32) {
        self.key = key
        self.release = release
    }

    public var encoded: [UInt8] { key.encoded + withUnsafeBytes(of: release.bigEndian, Array.init) }

    public init(encoded bytes: ArraySlice<UInt8>) throws {
        guard bytes.count == Self.encodedLength else { throw YaOKError(.malformedEnvelope, "An announcement is 40 bytes") }
        key = try ReceiverKey(encoded: bytes.prefix(ReceiverKey.encodedLength))
        release = bytes.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}
