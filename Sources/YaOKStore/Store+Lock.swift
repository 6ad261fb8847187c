import YaOKSupport
import YaOKWire
import YaOKCrypto

/// The vault rows, the persisted PIN failures and lockout, and small settings.
extension Store {
    /// The persisted PIN failures and lockout. The lockout is kept as the time it has left,
    /// measured on the boot clock (CLOCK_BOOTTIME, which counts through suspend and cannot
    /// be set), never as a wall-clock deadline: moving the clock changes nothing, and a
    /// restart resumes the lockout with what was left when it was last stored.
    package struct LockState: Equatable {
        /// Three wrong PINs in a row lock the PIN out (AC-030-03).
        package static let maxFailures = 3
        package var failures: Int
        /// Lockouts since the last successful unlock: each one lasts twice as long.
        package var lockouts: Int
        /// Milliseconds of lockout left as of `boot`; 0 when not locked out.
        package var remaining: Int64
        /// The boot-clock reading `remaining` was measured at.
        package var boot: BootTime

        package init(failures: Int = 0, lockouts: Int = 0, remaining: Int64 = 0,
                     boot: BootTime = BootTime(bootID: "", milliseconds: 0)) {
            self.failures = failures
            self.lockouts = lockouts
            self.remaining = remaining
            self.boot = boot
        }
    }

    /// The lock state, or nil when the row is missing or a value is not of its type: the
    /// caller must treat that as locked out (deleting the row must not reset the count).
    /// Clamped to sane ranges: the row is in an attacker-writable file, and extreme values
    /// must neither overflow the lockout arithmetic (a crash on every unlock) nor grant
    /// extra tries (a negative failure count).
    package func lockState() throws -> LockState? {
        var state: LockState?
        try db.query("""
            SELECT failures, lockouts, lockout_remaining_ms, lockout_boot_id, lockout_boot_ms,
                   typeof(failures) = 'integer' AND typeof(lockouts) = 'integer'
                   AND typeof(lockout_remaining_ms) = 'integer' AND typeof(lockout_boot_id) = 'text'
                   AND typeof(lockout_boot_ms) = 'integer'
            FROM lock_state WHERE id = 1
            """) {
            guard $0.int(5) == 1 else { return }
            state = LockState(failures: min(max($0.int(0), 0), LockState.maxFailures),
                              lockouts: min(max($0.int(1), 0), 1_000_000),
                              remaining: max($0.int64(2), 0),
                              boot: BootTime(bootID: $0.text(3), milliseconds: $0.int64(4)))
        }
        return state
    }

    /// Updates the row; a missing row is `corruptStore`, never a silent no-op.
    package func setLockState(_ state: LockState) throws {
        try db.query("""
            UPDATE lock_state SET failures = ?, lockouts = ?, lockout_remaining_ms = ?, lockout_boot_id = ?,
                                  lockout_boot_ms = ?, locked_until_ms = 0 WHERE id = 1
            """, Store.lockStateValues(state))
        guard db.changes == 1 else {
            throw YaOKError(.corruptStore, "The data store is corrupt: the lock state is missing")
        }
    }

    /// Writes the row, recreating it if it is missing (setup, a successful unlock, and the
    /// lockout that a missing row starts).
    package func replaceLockState(_ state: LockState) throws {
        try db.query("""
            INSERT OR REPLACE INTO lock_state (id, failures, lockouts, lockout_remaining_ms, lockout_boot_id,
                                               lockout_boot_ms, locked_until_ms) VALUES (1, ?, ?, ?, ?, ?, 0)
            """, Store.lockStateValues(state))
    }

    private static func lockStateValues(_ state: LockState) -> [SQLValue] {
        [.int(Int64(state.failures)), .int(Int64(state.lockouts)), .int(state.remaining),
         .text(state.boot.bootID), .int(state.boot.milliseconds)]
    }

    /// The sealed vault of `kind`. Costs are taken as stored (a negative one as 0); opening
    /// checks them against PINHashing's bounds.
    package func vault(_ kind: SealedVault.Kind) throws -> SealedVault? {
        try db.rows("SELECT salt, ops_limit, mem_limit, nonce, ciphertext, device_check FROM vault WHERE kind = ?",
                    [.text(kind.rawValue)]) {
            SealedVault(kind: kind, salt: $0.blob(0), opsLimit: UInt64(clamping: $0.int64(1)), memLimit: $0.int(2),
                        nonce: $0.blob(3), ciphertext: $0.blob(4), deviceCheck: $0.isNull(5) ? nil : $0.blob(5))
        }.first
    }

    package func saveVault(_ v: SealedVault) throws {
        try db.query("""
            INSERT OR REPLACE INTO vault (kind, salt, ops_limit, mem_limit, nonce, ciphertext, device_check)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
                     [.text(v.kind.rawValue), .blob(v.salt), .int(Int64(v.opsLimit)), .int(Int64(v.memLimit)),
                      .blob(v.nonce), .blob(v.ciphertext), v.deviceCheck.map { .blob($0) } ?? .null])
    }

    package func deleteVault(_ kind: SealedVault.Kind) throws {
        try db.query("DELETE FROM vault WHERE kind = ?", [.text(kind.rawValue)])
    }

    package func setting(_ key: String) throws -> Int64? {
        try db.rows("SELECT value FROM settings WHERE key = ?", [.text(key)]) { $0.int64(0) }.first
    }

    package func setSetting(_ key: String, _ value: Int64) throws {
        try db.query("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", [.text(key), .int(value)])
    }
}
