import YaOKCrypto

/// The forward-secrecy rings as they are on disk, decoded, per contact (Store+ReceiverKeys):
/// a ring is read for every packet sent to or received from its contact, and reading it
/// from the rows opens every own key (each secret copied into guarded memory) and every
/// unsettled send. The own keys' secrets stay in `SecureBytes` (guarded, wiped when freed),
/// in slots of `SecretSlab.receiverKeys` (Store+ReceiverKeys, ReceiverKeyPair.generate): 127
/// a locked page, so the 1,024 kept cost 9 guarded regions, not 1,024.
///
/// Never ahead of the disk nor behind it: what a transaction writes is `staged` until the
/// outermost commit, any rollback (of a savepoint too) forgets everything, and the store
/// forgets everything when the node locks (`Store.detach`) or it closes. Bound to the field
/// cipher the rings were opened with: another one finds nothing.
final class ReceiverKeyRingCache {
    /// At most this many contacts' rings (as the envelope's static-shared cache, Identity).
    static let capacity = 4096
    /// At most this many unsettled sends over all the rings kept (each ring holds at most
    /// ReceiverKeyRing.maxPending, so 16 full ones; a few MB).
    static let pendingCapacity = 1 << 16
    /// At most this many own keys over all the rings kept. A ring holds up to
    /// ReceiverKeyRing.cap (32) of them (a contact that never releases keeps 32), so 4,096
    /// rings could hold 131,072: even in slab slots (1,033 locked pages) past an 8 MiB
    /// RLIMIT_MEMLOCK, and as guarded regions of their own (four memory mappings each; a
    /// process may have 65,530) enough to make every sodium_malloc fail.
    static let ownKeyCapacity = 1_024

    /// A ring as stored, with its state row's plaintext as stored (nil: no row), so that a
    /// save writes that row only when it changes.
    struct Kept {
        var ring: ReceiverKeyRing
        var state: [UInt8]?
        /// False once the ring was taken to be changed (`take`): the entry keeps what a save
        /// compares with (own keys, state, version) without the sends, which only the taker
        /// holds, so that changing them copies none of them.
        var holdsPending = true
    }

    private var committed: [Int64: Kept] = [:]
    private var staged: [Int64: Kept] = [:]
    private var pendingKept = 0
    private var ownKept = 0
    private var cipher: FieldCipher?
    /// Versions given to rings (ReceiverKeyRing.storeVersion), from a random start so that
    /// a ring read from another store does not pass as this one's.
    private var lastVersion = UInt64.random(in: 0...(UInt64.max >> 1))

    func nextVersion() -> UInt64 {
        lastVersion &+= 1
        return lastVersion
    }

    /// What is kept of `contactID`'s ring for `cipher` (perhaps without its sends).
    func kept(_ contactID: Int64, cipher: FieldCipher) -> Kept? {
        guard self.cipher === cipher else { return nil }
        return staged[contactID] ?? committed[contactID]
    }

    /// The ring of `contactID` as stored, whole, if kept for `cipher`.
    func ring(_ contactID: Int64, cipher: FieldCipher) -> ReceiverKeyRing? {
        guard let kept = kept(contactID, cipher: cipher), kept.holdsPending else { return nil }
        return kept.ring
    }

    /// The ring of `contactID` as stored, whole, for a caller that changes and saves it:
    /// the entry lets go of the sends, so the caller's copy is their only one.
    func take(_ contactID: Int64, cipher: FieldCipher) -> ReceiverKeyRing? {
        guard var kept = kept(contactID, cipher: cipher), kept.holdsPending else { return nil }
        let ring = kept.ring
        kept.ring.forgetPending()
        kept.holdsPending = false
        if staged[contactID] != nil { staged[contactID] = kept } else { put(kept, contactID) }
        return ring
    }

    /// `ring` is what the disk holds for `contactID` now: in the open transaction (kept from
    /// its commit on) when `inTransaction`, else already committed.
    func keep(_ ring: Kept, _ contactID: Int64, cipher: FieldCipher, inTransaction: Bool) {
        if self.cipher !== cipher {
            removeAll()
            self.cipher = cipher
        }
        if inTransaction {
            staged[contactID] = ring
        } else {
            put(ring, contactID)
        }
    }

    /// The outermost transaction committed: what it wrote is stored.
    func committedTransaction() {
        let written = staged
        staged = [:]
        for (contactID, ring) in written { put(ring, contactID) }
    }

    /// Nothing kept (the node locked, or nothing read yet).
    var isEmpty: Bool { committed.isEmpty && staged.isEmpty && cipher == nil }
    /// Rings kept as committed, and the unsettled sends they hold (the bounds).
    var count: Int { committed.count }
    var sendsKept: Int { pendingKept }
    var ownKeysKept: Int { ownKept }

    /// Forgets `contactID` (its contact is deleted).
    func forget(_ contactID: Int64) {
        staged[contactID] = nil
        if let old = committed.removeValue(forKey: contactID) { uncount(old) }
    }

    /// Forgets everything (a rollback, the lock, the store closing), wiping the own keys'
    /// secrets as the last copies go.
    func removeAll() {
        committed = [:]
        staged = [:]
        pendingKept = 0
        ownKept = 0
        cipher = nil
    }

    private func put(_ kept: Kept, _ contactID: Int64) {
        if let old = committed.removeValue(forKey: contactID) { uncount(old) }
        // Past a bound, other rings go (any: they read again from the rows when next used).
        while committed.count >= Self.capacity || pendingKept + kept.ring.pending.count > Self.pendingCapacity
                || ownKept + kept.ring.own.count > Self.ownKeyCapacity,
              let other = committed.first {
            committed[other.key] = nil
            uncount(other.value)
        }
        committed[contactID] = kept
        pendingKept += kept.ring.pending.count
        ownKept += kept.ring.own.count
    }

    private func uncount(_ kept: Kept) {
        pendingKept -= kept.ring.pending.count
        ownKept -= kept.ring.own.count
    }
}
