import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Store-and-forward carriers as transports see them: relay sessions (Carrier.swift,
/// docs/PROTOCOL.md §8). The work is the engine's (DeliveryEngine+Carriers.swift).
extension Node {
    /// Packets fetched from a carrier and not processed yet, at most (then `receive` is
    /// refused and the transport stops reading until the node catches up).
    static let maxQueuedPacketsPerCarrier = 4_096
    static let maxQueuedBytesPerCarrier = 16 << 20
    /// How long a message a relay stored waits for the recipient's acknowledgement before it
    /// is posted again (the relay keeps one copy of a re-post); a direct link to the
    /// recipient sends it at once.
    static let carriedAckTimeoutMs: Int64 = 3_600_000
    /// The longest wait a relay may impose with a rate limit (its window is an hour).
    static let maxCarrierPauseMs: Int64 = 3_600_000

    /// Opens a carrier for a session that is ready (logged in). Needs the node unlocked:
    /// mailboxes are derived from the identity keys, and a lock ends the session. Due packets
    /// for contacts with no direct link are posted to it at once. `route`: where the user
    /// configured the service (a relay's "host:port"), what the node tracks it by; `relay`:
    /// the identifier the relay stated (§8.2), which names its mailboxes.
    public func openCarrier(transport: String, route: String, relay: [UInt8], callbacks: CarrierCallbacks) throws -> Carrier {
        try withUnlockedEngine { engine, store, keys in
            try engine.openCarrier(transport: transport, route: route, relay: relay, callbacks: callbacks, node: self, store, keys)
        }
    }

    /// The keys of the mailboxes our contacts post to for us at `relay` (§8.2), one per
    /// contact, to subscribe with. Needs the node unlocked.
    public func incomingMailboxes(relay: [UInt8]) throws -> [SigningKey] {
        try withUnlockedEngine { engine, store, keys in
            guard let directory = try engine.directory(store, keys) else { return [] }
            return try directory.byContact.keys.sorted().compactMap { try directory.byContact[$0]?.route.incomingMailbox(relay: relay) }
        }
    }

    /// Whether a relay session would have anything to do: a contact, whose mailbox we
    /// subscribe to and to whom we post (without one there is nothing to receive or send,
    /// and a relay transport holds no session, §8.3). Needs the node unlocked.
    public func hasRelayWork() throws -> Bool {
        try withUnlockedEngine { engine, store, keys in !(try engine.directory(store, keys)?.byContact.isEmpty ?? true) }
    }

    /// The relay-only key this node logs in to `relay` ("host:port") with: random, made the
    /// first time and kept sealed in the store (§8.2). Needs the node unlocked.
    public func relayPseudonym(for relay: String) throws -> SigningKey {
        try withUnlocked { store, keys, _ in try store.relayPseudonym(relay, cipher: keys.cipher) }
    }

    func carrierAccepted(_ carrier: Carrier, _ ids: [MessageID]) {
        carrierWork(carrier, inFlight: ids) { engine, store, keys in try engine.carrierAccepted(carrier, ids, store, keys) }
    }

    func carrierRefused(_ carrier: Carrier, _ id: MessageID, error: YaOKError, retryAfterMs: Int64?) {
        carrierWork(carrier, inFlight: [id]) { engine, store, keys in
            try engine.carrierRefused(carrier, id, error: error, retryAfterMs: retryAfterMs, store, keys)
        }
    }

    func carrierCarry(_ carrier: Carrier, _ message: CarryLinkMessage) {
        carrierWork(carrier) { engine, store, keys in try engine.receiveCarry(message, on: carrier.id, store, keys) }
    }

    /// What a carrier brought, worked on under the node's lock. The node's own failure (the
    /// store, the disk) is not the transport's to handle (it has nothing to try instead): the
    /// engine reports it and tries again (`DeliveryEngine.carrierWorkFailed`). Any other
    /// error is what the service sent, refused (a reconciliation message the reconciler
    /// refuses ends the exchange, §11): no notice blames the store for it, and nothing is
    /// tried again. A closed node did nothing.
    private func carrierWork(_ carrier: Carrier, inFlight ids: [MessageID] = [],
                             _ body: (inout DeliveryEngine, Store, UnlockedKeys?) throws -> Void) {
        _ = try? withEngine { engine, store, keys in
            do {
                try body(&engine, store, keys)
            } catch where DeliveryEngine.isNodesOwnFailure(error) {
                engine.carrierWorkFailed(carrier, ids, error, store)
            }
        }
    }

    func carrierReceived(_ carrier: Carrier, _ packet: [UInt8]) -> Bool {
        queueInbound(packet, from: carrier.id)?.accepted ?? false
    }

    /// Closes a carrier: from its transport (`Carrier.close`) or from the node (locked,
    /// closing; then the transport's `closed` callback runs). Packets in flight on it go
    /// back to the outbox as they were, due at once: the session ending is not their
    /// failure (a relay session expires every hour), and posting again is idempotent.
    func closeCarrier(_ carrier: Carrier, reason: String, notifyTransport: Bool) {
        let removed = (try? withEngine { engine, store, keys in try engine.closeCarrier(carrier, store, keys) }) ?? false
        if removed, notifyTransport { carrier.callbacks.closed(reason) }
    }

    /// Ends every carrier's session (the node locked or is closing).
    func closeCarriers(reason: String) {
        let carriers = state.withLock { s in s.delivery.carriers.values.map(\.carrier) }
        for c in carriers { closeCarrier(c, reason: reason, notifyTransport: true) }
    }
}
