import YaOKSupport
import YaOKWire
import YaOKStore

/// Carrying for others: the setting and the figures (docs/PROTOCOL.md §12). Both work while
/// locked: carrying needs no keys.
extension Node {
    /// Sets whose packets this node carries and the store's caps, kept across restarts.
    /// Turning carrying `off` deletes every carried packet it holds (zeroed on disk);
    /// lowering a cap evicts down to it (§10.9 order). `invalidArgument` for a cap under one
    /// packet or under the largest packet's bytes, or over `CarryLimits.maxPacketsLimit`/`maxBytesLimit`.
    public func setCarry(mode: CarryMode, limits: CarryLimits = .standard) throws {
        var policy = CarryPolicy.default
        policy.maxPackets = limits.maxPackets
        policy.maxBytes = limits.maxBytes
        try policy.validate()
        try limits.validateUpperBounds()
        try withEngine { engine, store, keys in
            if mode == .off {
                try store.deleteAllCarried()
            } else {
                _ = try store.shrinkCarried(to: policy, nowMs: engine.now)
            }
            if mode == .off {
                engine.carry.sessions = [:]
                engine.carry.relayMeetings = [:]
            } else if mode == .contactsOnly {
                // Meetings in progress with strangers end now (§12.1): left running, they would
                // go on taking a stranger's packets, showing it the store and remembering its
                // claims for as long as the link lasts.
                for (id, session) in engine.carry.sessions.sorted(by: { $0.key < $1.key })
                where session.carries && !session.toRelay && engine.links[id]?.link.peerIsContact != true {
                    engine.carryLinkClosed(id, store)
                }
            }
            var setting = engine.carry
            setting.mode = mode
            setting.limits = limits
            try setting.save(store)
            engine.carry.mode = mode
            engine.carry.limits = limits
            if mode != .contactsOnly { try engine.takeHeldMeetings(dueBy: .max, store, keys) }
        }
    }

    /// The carry mode in force; `closed` once the node is (not a made-up default).
    public func carryMode() throws -> CarryMode {
        try withEngine { engine, _, _ in engine.carry.mode }
    }

    /// What this node holds for carrying and has carried since it was opened.
    public func carryStatistics() throws -> CarryStatistics {
        try withEngine { engine, store, _ in try engine.carryStatistics(store) }
    }
}

/// For the simulator's metrics (package only): which carried packets a node holds, and the
/// carried copy of a message it sent.
extension Node {
    package func carriedPacketIDs() -> [[UInt8]] {
        (try? withEngine { engine, store, _ in try store.carriedKeys(nowMs: engine.now, limit: Int.max >> 1).map(\.id) }) ?? []
    }

    /// Bytes of reconciliation messages (§11) this node sent since it was opened.
    package func carryReconciliationBytesSent() -> Int {
        (try? withEngine { engine, _, _ in engine.carry.counters.reconciliationBytesSent }) ?? 0
    }

    package func ownCarriedPacketID(_ messageID: MessageID) -> [UInt8]? {
        (try? withEngine { _, store, _ in try store.ownCarried(messageID: messageID.bytes)?.packetID }) ?? nil
    }
}
