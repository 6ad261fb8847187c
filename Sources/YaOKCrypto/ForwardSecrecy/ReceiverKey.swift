import YaOKSupport

/// A receiver key's public half as it travels (docs/PROTOCOL.md §13.2): the ID its owner
/// gave it (u32, big-endian) and the X25519 public key, 36 bytes. A contact seals its next
/// messages to the newest one it has heard of, so a seized device opens only what is sealed
/// to keys it still holds.
public struct ReceiverKey: Sendable, Hashable {
    public static let encodedLength = 4 + 32
    /// IDs with the top bit set are prekeys (published in a card, §13.4); the others are
    /// per-contact receiver keys, numbered from 1 by their owner.
    public static let prekeyBit: UInt32 = 0x8000_0000

    public let id: UInt32
    public let publicKey: [UInt8]

    public init(id: UInt32, publicKey: [UInt8]) throws {
        guard publicKey.count == 32 else { throw YaOKError(.invalidArgument, "A receiver key is 32 bytes") }
        guard id != 0 else { throw YaOKError(.invalidArgument, "Receiver key ID 0 is reserved") }
        self.id = id
        self.publicKey = publicKey
    }

    /// id (u32 BE) || public key.
    public var encoded: [UInt8] { withUnsafeBytes(of: id.bigEndian, Array.init) + publicKey }

    /// Reads the 36 bytes `encoded` makes; ID 0 or a wrong length is `malformedEnvelope`.
    public init(encoded bytes: ArraySlice<UInt8>) throws {
        guard bytes.count == Self.encodedLength else { throw YaOKError(.malformedEnvelope, "A receiver key is 36 bytes") }
        let id = bytes.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard id != 0 else { throw YaOKError(.malformedEnvelope, "Receiver key ID 0 is reserved") }
        self.id = id
        self.publicKey = Array(bytes.dropFirst(4))
    }

    public var isPrekey: Bool { Self.isPrekey(id: id) }
    public static func isPrekey(id: UInt32) -> Bool { id & prekeyBit != 0 }

    /// The prekey ID for UTC day `day` (days since 1970-01-01): the top bit and the day.
    public static func prekeyID(day: Int64) -> UInt32 { prekeyBit | UInt32(truncatingIfNeeded: day) & ~prekeyBit }
    /// The UTC day of a prekey ID (meaningless for a per-contact key).
    public static func prekeyDay(id: UInt32) -> Int64 { Int64(id & ~prekeyBit) }
    /// The UTC day (days since 1970-01-01) of a Unix time in milliseconds.
    public static func utcDay(ms: Int64) -> Int64 { ms >= 0 ? ms / 86_400_000 : (ms + 1) / 86_400_000 - 1 }
}

/// The prekey rules (docs/PROTOCOL.md §13.4), in UTC days: a sender seals to a prekey of day
/// D while its own day is at most D + 7; the owner erases the prekey's secret when its day
/// reaches D + 23 (the last seal, before day D + 8 ends, plus a packet's 14-day life, plus
/// a day for clocks that disagree).
public enum Prekey {
    /// A sender seals to a prekey for at most this many days after the prekey's day.
    public static let sealDays: Int64 = 7
    /// The owner erases a prekey this many days after its day.
    public static let retentionDays: Int64 = 7 + 15 + 1

    /// Whether a sender at `nowMs` may seal to `key`: a prekey of day D with D − 1 ≤ today ≤
    /// D + 7. One dated further ahead (its owner's clock was wrong) is not used: it would be
    /// sealed to, and kept, for longer than the bounds state.
    public static func isFresh(_ key: ReceiverKey, nowMs: Int64) -> Bool {
        let today = ReceiverKey.utcDay(ms: nowMs), day = ReceiverKey.prekeyDay(id: key.id)
        return key.isPrekey && today >= day - 1 && today <= day + sealDays
    }

    /// Until when (ms, exclusive) a message sealed to `key` may open at its owner: the start
    /// of day D + 23, when the owner erases it.
    public static func exposureEndMs(_ key: ReceiverKey) -> Int64 {
        (ReceiverKey.prekeyDay(id: key.id) + retentionDays) * 86_400_000
    }

    /// Whether the owner erases a prekey with ID `id` at `nowMs`.
    public static func isExpired(id: UInt32, nowMs: Int64) -> Bool {
        ReceiverKey.utcDay(ms: nowMs) >= ReceiverKey.prekeyDay(id: id) + retentionDays
    }
}

/// A receiver key with its secret, held by its owner (in guarded memory; the store keeps it
/// sealed in the vault and erases it when it expires, §13.3).
public struct ReceiverKeyPair: Sendable {
    public let key: ReceiverKey
    public let secret: SecureBytes

    public init(id: UInt32, secret: SecureBytes) throws {
        guard secret.count == 32 else { throw YaOKError(.invalidArgument, "A receiver key secret is 32 bytes") }
        try Sodium.ensureInitialized()
        let publicKey = try secret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        self.key = try ReceiverKey(id: id, publicKey: publicKey)
        self.secret = secret
    }

    /// A pair whose public key the caller already holds (read back from the vault, which
    /// authenticates it): no base multiplication, so loading many costs no X25519.
    package init(id: UInt32, secret: SecureBytes, publicKey: [UInt8]) throws {
        guard secret.count == 32 else { throw YaOKError(.invalidArgument, "A receiver key secret is 32 bytes") }
        self.key = try ReceiverKey(id: id, publicKey: publicKey)
        self.secret = secret
    }

    /// A fresh key pair under `id`, its secret in a slot of SecretSlab.receiverKeys (a node
    /// holds up to 1,024 in its ring cache: a guarded region each would need a locked page each).
    public static func generate(id: UInt32) throws -> ReceiverKeyPair {
        try ReceiverKeyPair(id: id, secret: try SecureBytes.random(in: .receiverKeys))
    }
}
