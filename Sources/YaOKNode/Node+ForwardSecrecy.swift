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
    /// Messages to the contact are sealed to the prekey of its card (§13.4: it announced
    /// nothing yet and the prekey is at most 7 days past its day): the end (ms, exclusive)
    /// of their exposure, when the contact erases that prekey. nil otherwise.
    public let prekeyExposureUntilMs: Int64?
    /// Messages sealed to the contact's long-term key because it had announced no receiver
    /// key (the first message, or an older implementation); kept in the store, so it counts
    /// across restarts since the contact was added.
    public let longTermSeals: Int
    /// Own receiver keys held for the contact (at most ReceiverKeyRing.cap).
    public let receiverKeys: Int

    /// "on", "prekey", "not_yet" or "off" (C YAOK_FORWARD_SECRECY_*, docs/ABI.md "diagnostics").
    public var state: String { !enabled ? "off" : (active ? "on" : (prekeyExposureUntilMs != nil ? "prekey" : "not_yet")) }

    /// The "forward_secrecy" object of a contact in diagnostics (docs/ABI.md).
    public var json: JSON {
        var fields: [(String, JSON)] = [("state", .string(state)), ("long_term_seals", .int(Int64(longTermSeals))),
                                        ("receiver_keys", .int(Int64(receiverKeys)))]
        if let until = prekeyExposureUntilMs { fields.append(("prekey_exposure_until_ms", .int(until))) }
        return .object(fields)
    }

    /// For diagnostics: "forward secrecy: …".
    public var summary: String {
        guard enabled else { return "forward secrecy: off (messages sealed to the long-term key)" }
        if active { return "forward secrecy: on (\(receiverKeys) receiver keys held)" }
        if let until = prekeyExposureUntilMs {
            // The exposure ends at the start of that day: "until 2026-12-20" alone reads as
            // including the 20th.
            return "forward secrecy: prekey (exposure until \(Self.utcDate(until)) 00:00 UTC; \(longTermSeals) sealed to the long-term key)"
        }
        return "forward secrecy: not yet (no receiver key from this contact; \(longTermSeals) sealed to the long-term key)"
    }

    /// "YYYY-MM-DD" (UTC) of a Unix time in ms: the day a prekey exposure ends at its start.
    public static func utcDate(_ ms: Int64) -> String {
        // Days since 1970-01-01 to a civil date (Howard Hinnant's days_from_civil, inverted).
        let z = ReceiverKey.utcDay(ms: ms) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(y)-\(two(m))-\(two(d))"
    }
}

extension Node {
    /// Forward secrecy with contact `id`; `notFound` if there is none.
    public func forwardSecrecy(_ id: Int64) throws -> ForwardSecrecyStatus {
        try withUnlocked { store, keys, s in
            guard try store.contactExists(id) else { throw YaOKError(.notFound, "No such contact") }
            let ring = try store.receiverKeyRing(contactID: id, cipher: keys.cipher)
            let enabled = s.delivery.forwardSecrecy
            // With the option off nothing is sealed to a key the contact holds: no prekey state.
            let key = enabled ? ring.sealingKey(nowMs: s.delivery.now) : nil
            return ForwardSecrecyStatus(enabled: enabled, active: enabled && key.map { !$0.isPrekey } ?? false,
                                        prekeyExposureUntilMs: key.flatMap { $0.isPrekey ? Prekey.exposureEndMs($0) : nil },
                                        longTermSeals: Int(clamping: try store.longTermSeals(contactID: id, cipher: keys.cipher)), receiverKeys: ring.own.count)
        }
    }
}
