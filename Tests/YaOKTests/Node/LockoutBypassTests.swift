import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Issue 8 §2: the lockout cannot be bypassed by deleting or altering the lock state row,
/// by moving the wall clock, or by restarting.
@Suite struct LockoutBypassTests {
    /// A node set up and closed, opened again locked with the same clock.
    private func lockedNode(_ dir: TempDir, _ clock: TestClock) throws -> Node {
        try makeNode(dir, clock: clock).close()
        return try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
    }

    private func threeWrong(_ node: Node) -> String? {
        _ = try? node.unlock(pin: "900001")
        _ = try? node.unlock(pin: "900002")
        return errorMessage { try node.unlock(pin: "900003") }
    }

    private func editStore(_ dir: TempDir, _ sql: String) throws {
        let store = try Store(directory: dir.path)
        try store.db.execute(sql)
        store.close()
    }

    @Test func deletingTheLockStateRowLocksOutForTheLongestLockout() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        var node: Node? = try lockedNode(dir, clock)
        #expect(threeWrong(node!) == "Too many attempts. Try again in 30 seconds.")
        node?.close()
        node = nil
        try editStore(dir, "DELETE FROM lock_state")

        let reopened = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
        #expect(errorMessage { try reopened.unlock(pin: testPIN) } == "Too many attempts. Try again in 3600 seconds.")
        #expect(try reopened.status().lockoutSecondsRemaining == 3600)
        #expect(try reopened.status().locked)
        // The row is back, so later updates hold; the next lockout is the longest too.
        clock.advance(seconds: 3600)
        #expect(threeWrong(reopened) == "Too many attempts. Try again in 3600 seconds.")
        clock.advance(seconds: 3600)
        try reopened.unlock(pin: testPIN)
        #expect(try reopened.securityEvents().contains { $0.detail.contains("lock state missing") })
    }

    @Test(arguments: ["UPDATE lock_state SET failures = 'none'", "UPDATE lock_state SET failures = 0.5",
                      "UPDATE lock_state SET lockout_remaining_ms = 'soon'", "UPDATE lock_state SET lockout_boot_id = x'07'",
                      "UPDATE lock_state SET lockouts = x''"])
    func anUnreadableLockStateLocksOut(sql: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        try makeNode(dir, clock: clock).close()
        try editStore(dir, sql)
        let node = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
        #expect(throws: YaOKError(.lockedOut)) { try node.unlock(pin: testPIN) }
        #expect(try node.status().lockoutSecondsRemaining == 3600)
    }

    @Test func anUpdateThatChangesNoRowFails() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try Store(directory: dir.path)
        defer { store.close() }
        try store.setLockState(.init(failures: 1))
        try store.db.execute("DELETE FROM lock_state")
        #expect(try store.lockState() == nil)
        #expect(throws: YaOKError(.corruptStore)) { try store.setLockState(.init(failures: 2)) }
        try store.replaceLockState(.init(failures: 2))
        #expect(try store.lockState()?.failures == 2)
    }

    @Test func movingTheWallClockForwardDoesNotEndALockout() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        let node = try lockedNode(dir, clock)
        #expect(threeWrong(node) == "Too many attempts. Try again in 30 seconds.")
        clock.moveWallClock(seconds: 24 * 3600)
        #expect(errorMessage { try node.unlock(pin: testPIN) } == "Too many attempts. Try again in 30 seconds.")
        #expect(try node.status().lockoutSecondsRemaining == 30)
        clock.moveWallClock(seconds: -48 * 3600)
        #expect(try node.status().lockoutSecondsRemaining == 30)
        clock.advance(seconds: 30)
        try node.unlock(pin: testPIN)
    }

    @Test func aRestartResumesTheLockoutWhereItWas() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        var node: Node? = try lockedNode(dir, clock)
        #expect(threeWrong(node!) == "Too many attempts. Try again in 30 seconds.")
        clock.advance(seconds: 10)
        node?.close()
        node = nil
        let reopened = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
        #expect(try reopened.status().lockoutSecondsRemaining == 20)
    }

    @Test func aRebootResumesFromWhatWasLeftAtTheLastLook() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        var node: Node? = try lockedNode(dir, clock)
        #expect(threeWrong(node!) == "Too many attempts. Try again in 30 seconds.")
        clock.advance(seconds: 10)
        #expect(try node?.status().lockoutSecondsRemaining == 20)
        node?.close()
        node = nil
        // The new boot's clock starts near zero: the old reading cannot be compared, so the
        // lockout goes on from the 20 s it had left, and counts down in this boot.
        clock.reboot()
        clock.moveWallClock(seconds: 7 * 24 * 3600)
        let reopened = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
        #expect(errorMessage { try reopened.unlock(pin: testPIN) } == "Too many attempts. Try again in 20 seconds.")
        clock.advance(seconds: 15)
        #expect(try reopened.status().lockoutSecondsRemaining == 5)
        clock.advance(seconds: 5)
        try reopened.unlock(pin: testPIN)
    }
}
