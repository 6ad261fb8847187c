import YaOKSupport
import YaOKCrypto
import YaOKStore

/// What the node says about forward secrecy with one contact (docs/PROTOCOL.md §13.5): a
/// fallback to the long-term key is never silent.
public struct ForwardSecrecyStatus: Sendable, Equatable {
    /// Node.Options.forwardSecrecy.
    public let enabled: Bool
    /// The contact has announced a receiver key: messages to it are sealed to that key.
    public let active: Bool
    /// Messages sealed to the contact's long-term key because it had announced no receiver
    /// key (the first message, or an older implementation); kept in the store, so it counts
    /// across restarts since the contact was added.
    public let longTermSeals: Int
    /// Own receiver keys held for the contact (at most ReceiverKeyRing.cap).
    public let receiverKeys: Int

    /// "on", "not_yet" or "off" (C YAOK_FORWARD_SECRECY_*, docs/ABI.md "diagnostics").
    public var state: String { !enabled ? "off" : (active ? "on" : "not_yet") }

    /// The "forward_secrecy" object of a contact in diagnostics (docs/ABI.md).
    public var json: JSON {
        .object([("state", .string(state)), ("long_term_seals", .int(Int64(longTermSeals))),
                 ("receiver_keys", .int(Int64(receiverKeys)))])
    }

    /// For diagnostics: "forward secrecy: …".
    public var summary: String {
        guard enabled else { return "forward secrecy: off (messages sealed to the long-term key)" }
        if active { return "forward secrecy: on (\(receiverKeys) receiver keys held)" }
        return "forward secrecy: not yet (no receiver key from this contact; \(longTermSeals) sealed to the long-term key)"
    }
}

extension Node {
    /// Forward secrecy with contact `id`; `notFound` if there is none.
    public func forwardSecrecy(_ id: Int64) throws -> ForwardSecrecyStatus {
        try withUnlocked { store, keys, s in
            guard try store.contactExists(id) else { throw YaOKError(.notFound, "No such contact") }
            let ring = try store.receiverKeyRing(contactID: id, cipher: keys.cipher)
            return ForwardSecrecyStatus(enabled: s.delivery.forwardSecrecy, active: s.delivery.forwardSecrecy && ring.peerKey != nil,
                                        longTermSeals: Int(clamping: try store.longTermSeals(contactID: id, cipher: keys.cipher)), receiverKeys: ring.own.count)
        }
    }
}
