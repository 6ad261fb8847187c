import YaOKSupport
import YaOKWire
import YaOKCrypto

/// The vault rows, the persisted PIN failures and lockout, and small settings.
extension Store {
    package struct LockState: Equatable {
        /// Three wrong PINs in a row lock the PIN out (AC-030-03).
        package static let maxFailures = 3
        package var failures: Int
        /// Wall-clock milliseconds; 0 when not locked out.
        package var lockedUntil: Int64
        /// Lockouts since the last successful unlock: each one lasts twice as long.
        package var lockouts: Int = 0

        package init(failures: Int, lockedUntil: Int64, lockouts: Int = 0) {
            self.failures = failures
            self.lockedUntil = lockedUntil
            self.lockouts = lockouts
        }
    }

    /// Clamped to sane ranges: the row is in an attacker-writable file, and extreme values
    /// must neither overflow the lockout arithmetic (a crash on every unlock) nor grant
    /// extra tries (a negative failure count).
    package func lockState() throws -> LockState {
        var state = LockState(failures: 0, lockedUntil: 0)
        try db.query("SELECT failures, locked_until_ms, lockouts FROM lock_state WHERE id = 1") {
            state = LockState(failures: min(max($0.int(0), 0), LockState.maxFailures),
                              lockedUntil: max($0.int64(1), 0),
                              lockouts: min(max($0.int(2), 0), 1_000_000))
        }
        return state
    }

    package func setLockState(_ state: LockState) throws {
        try db.query("UPDATE lock_state SET failures = ?, locked_until_ms = ?, lockouts = ? WHERE id = 1",
                     [.int(Int64(state.failures)), .int(state.lockedUntil), .int(Int64(state.lockouts))])
    }

    /// The sealed vault of `kind`. Costs are taken as stored (a negative one as 0); opening
    /// checks them against PINHashing's bounds.
    package func vault(_ kind: SealedVault.Kind) throws -> SealedVault? {
        try db.rows("SELECT salt, ops_limit, mem_limit, nonce, ciphertext FROM vault WHERE kind = ?", [.text(kind.rawValue)]) {
            SealedVault(kind: kind, salt: $0.blob(0), opsLimit: UInt64(clamping: $0.int64(1)), memLimit: $0.int(2),
                        nonce: $0.blob(3), ciphertext: $0.blob(4))
        }.first
    }

    package func saveVault(_ v: SealedVault) throws {
        // A first PIN vault (setup): the next attach starts the security log's seal.
        if v.kind == .pin, try storedLogSeal() == nil { startingLog = true }
        try db.query("INSERT OR REPLACE INTO vault (kind, salt, ops_limit, mem_limit, nonce, ciphertext) VALUES (?, ?, ?, ?, ?, ?)",
                     [.text(v.kind.rawValue), .blob(v.salt), .int(Int64(v.opsLimit)), .int(Int64(v.memLimit)),
                      .blob(v.nonce), .blob(v.ciphertext)])
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
