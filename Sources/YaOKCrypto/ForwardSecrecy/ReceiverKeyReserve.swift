import YaOKSupport

/// Receiver key pairs made ahead of time, so that minting one costs no base multiplication
/// where it happens: a node mints a key at every message opened with its newest key for the
/// contact (§13.3 rule 3), inside the receiver's drain, before its ack (which announces the
/// key) can leave. That multiplication was a tenth of the instructions of the drains of a
/// message sent one at a time (callgrind, `YAOK_BENCH_SEND_RECEIVE=each yaok-bench send`).
/// The node's event thread makes the next one once a drain is done (`Node.drainInbound`),
/// while the link is idle.
///
/// Each pair is handed out once (taken out of the reserve before it is used) and its secret
/// lives in a slot of SecretSlab.receiverKeys from the moment it is made, as every own
/// receiver key's does: a pair made ahead is a fresh random key that nothing was sealed to,
/// and it belongs to no node until minted, so the nodes of a process share one reserve.
package enum ReceiverKeyReserve {
    /// Pairs kept ready: a drain that opens messages from several contacts mints one each.
    package static let capacity = 4
    private static let pairs = Locked<[(secret: SecureBytes, publicKey: [UInt8])]>([])

    /// A pair under `id`: one made ahead if there is one, else made now.
    static func pair(id: UInt32) throws -> ReceiverKeyPair {
        guard let made = pairs.withLock({ $0.popLast() }) else { return try ReceiverKeyPair.generate(id: id) }
        return try ReceiverKeyPair(id: id, secret: made.secret, publicKey: made.publicKey)
    }

    /// Pairs ready now.
    package static var count: Int { pairs.withLock { $0.count } }

    /// Makes one pair if fewer than `capacity` are ready; returns whether more are wanted.
    /// Called with no lock of the caller's held (one base multiplication, ~25 µs).
    package static func makeOne() throws -> Bool {
        guard count < capacity else { return false }
        let secret = try SecureBytes.random(in: .receiverKeys)
        let publicKey = try secret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        // Two threads may top it up at once: a pair past the capacity is dropped (wiped).
        return pairs.withLock { ready in
            if ready.count < capacity { ready.append((secret, publicKey)) }
            return ready.count < capacity
        }
    }

    /// Wipes every pair kept (tests).
    package static func removeAll() { pairs.withLock { $0.removeAll() } }
}
