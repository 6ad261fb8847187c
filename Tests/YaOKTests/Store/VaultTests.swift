import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The vault row is read back from a file an attacker may have written.
@Suite struct VaultTests {
    /// KDF costs outside PINHashing's bounds are refused as a corrupt store before any
    /// Argon2id runs: no trap on a negative value, no huge allocation, no hours of passes.
    @Test(arguments: [(Int64(-1), Int64(8192)), (1, 1 << 40), (1000, 8192), (1, 1024), (0, 8192)])
    func tamperedCostsAreRefusedBeforeHashing(ops: Int64, mem: Int64) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        node.close()
        let store = try Store(directory: dir.path)
        try store.db.query("UPDATE vault SET ops_limit = ?, mem_limit = ? WHERE kind = 'pin'", [.int(ops), .int(mem)])
        store.close()
        let reopened = try Node(dataDirectory: dir.path, options: fastOptions())
        #expect(throws: YaOKError(.corruptStore)) { try reopened.unlock(pin: testPIN) }
    }

    @Test func setupRefusesCostsItCouldNotOpenAgain() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var options = fastOptions()
        options.pinHashing = PINHashing(opsLimit: 1, memLimit: 1 << 30)
        let node = try Node(dataDirectory: dir.path, options: options)
        #expect(throws: YaOKError(.invalidArgument)) { try node.setup(name: "Alice", pin: testPIN, confirmation: testPIN) }
        #expect(try node.status().initialized == false)
        #expect(PINHashing.standard.isWithinBounds && PINHashing.insecureFastForTestsOnly.isWithinBounds)
    }
}

/// The lock_state row is as attacker-writable as the vault.
@Suite struct LockStateTests {
    @Test(arguments: [(Int64.min, Int64.min, Int64.max), (Int64.max, Int64.max, Int64.max), (-1_000_000, 0, -5)])
    func extremeValuesNeitherCrashNorGrantTries(failures: Int64, lockedUntil: Int64, lockouts: Int64) throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = try makeNode(dir).close()
        let store = try Store(directory: dir.path)
        try store.db.query("UPDATE lock_state SET failures = ?, locked_until_ms = ?, lockout_remaining_ms = ?, lockouts = ?",
                           [.int(failures), .int(lockedUntil), .int(lockedUntil), .int(lockouts)])
        store.close()
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        var wrong = 0
        for pin in ["900001", "900002", "900003", "900004"] {
            do { try node.unlock(pin: pin) } catch let e as YaOKError where e.code == .wrongPIN { wrong += 1 } catch {}
        }
        #expect(wrong < Node.maxPINAttempts)
        _ = try node.status()
    }
}
