import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The security log (seed: "System Monitors Security Events").
extension Node {
    /// The newest `limit` (1 to 1000) events with an id below `before` (nil: the newest),
    /// oldest first. Needs the node unlocked: the log tells when someone tried PINs.
    public func securityEvents(limit: Int = 100, before: Int64? = nil) throws -> [SecurityEvent] {
        guard (1...1000).contains(limit) else { throw YaOKError(.invalidArgument, "limit must be 1 to 1000") }
        return try withUnlocked { store, _, _ in try store.securityEvents(limit: limit, before: before, now: now) }
    }

    /// Records an event seen elsewhere (transport, delivery): an unknown sender, a tampered
    /// message, a TLS failure. `detail` must not contain message content or keys. Works
    /// while locked (transports report whatever happens).
    @discardableResult
    public func recordSecurityEvent(_ kind: SecurityEventKind, detail: String = "") throws -> SecurityEvent {
        try withStore { store, _ in try logSecurityEvent(store, kind, detail) }
    }
}
