import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct NodeLockTests {
    @Test func setupValidatesNamePINAndConfirmation() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        #expect(try node.status().initialized == false)
        #expect(throws: YaOKError(.pinTooShort)) { try node.setup(name: "Alice", pin: "12345", confirmation: "12345") }
        #expect(throws: YaOKError(.pinTooShort)) { try node.setup(name: "Alice", pin: "12a45", confirmation: "12a45") }
        #expect(throws: YaOKError(.pinMismatch)) { try node.setup(name: "Alice", pin: "123456", confirmation: "654321") }
        #expect(throws: YaOKError(.invalidName)) { try node.setup(name: "A", pin: "123456", confirmation: "123456") }
        let result = try node.setup(name: "Alice", pin: "000000", confirmation: "000000")
        #expect(result.warnings == .allZeroPIN)
        #expect(result.identity.name == "Alice")
        #expect(try node.status() == NodeStatus(initialized: true, locked: false, lockoutSecondsRemaining: 0,
                                                failedAttempts: 0, autoLock: .standard, platformKeyRegistered: false,
                                                vault: VaultStatus(pinHashing: .insecureFastForTestsOnly,
                                                                   meetsProductionMinimum: false, deviceBound: false)))
        #expect(throws: YaOKError(.alreadyInitialized)) { try node.setup(name: "Bob", pin: "123456", confirmation: "123456") }
    }

    @Test func unlockWithPINAfterReopen() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let userID = try makeNode(dir).identity().publicIdentity.userID
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        #expect(try node.status().locked)
        #expect(throws: YaOKError(.locked)) { try node.identity() }
        #expect(throws: YaOKError(.locked)) { try node.contacts() }
        #expect(throws: YaOKError(.wrongPIN)) { try node.unlock(pin: "111111") }
        try node.unlock(pin: testPIN)
        #expect(try node.identity().publicIdentity.userID == userID)
        #expect(try node.status().failedAttempts == 0)
    }

    @Test func threeWrongPINsLockOutAndSurviveReopen() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        try makeNode(dir, clock: clock).close()
        var node: Node? = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
        #expect(errorMessage { try node?.unlock(pin: "000000") } == "Incorrect PIN")
        #expect(throws: YaOKError(.wrongPIN)) { try node?.unlock(pin: "000001") }
        #expect(errorMessage { try node?.unlock(pin: "000002") } == "Too many attempts. Try again in 30 seconds.")
        // Even the right PIN is refused during the lockout, and it is not checked.
        #expect(errorMessage { try node?.unlock(pin: testPIN) } == "Too many attempts. Try again in 30 seconds.")
        node?.close()
        node = nil

        clock.advance(seconds: 12)
        let reopened = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
        #expect(try reopened.status().lockoutSecondsRemaining == 18)
        #expect(errorMessage { try reopened.unlock(pin: testPIN) } == "Too many attempts. Try again in 18 seconds.")
        clock.advance(seconds: 18)
        try reopened.unlock(pin: testPIN)
        let kinds = try reopened.securityEvents().map(\.kind)
        #expect(kinds.filter { $0 == .wrongPIN }.count == 3)
        #expect(kinds.contains(.lockout))
        #expect(kinds.last == .unlocked)
    }

    /// Brute force: every lockout after the first doubles, up to an hour; a successful
    /// unlock starts again at 30 s.
    @Test func repeatedLockoutsGrowUntilASuccessfulUnlock() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        let node = try makeNode(dir, clock: clock)
        try node.lock()
        func threeWrong() -> String? {
            _ = try? node.unlock(pin: "000001")
            _ = try? node.unlock(pin: "000002")
            return errorMessage { try node.unlock(pin: "000003") }
        }
        for expected in [30, 60, 120, 240, 480, 960, 1920, 3600, 3600] {
            #expect(threeWrong() == "Too many attempts. Try again in \(expected) seconds.")
            #expect(try node.status().lockoutSecondsRemaining == expected)
            clock.advance(seconds: Int64(expected))
        }
        // Reopening keeps the count: the next lockout is still an hour.
        node.close()
        let reopened = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
        _ = try? reopened.unlock(pin: "000001")
        _ = try? reopened.unlock(pin: "000002")
        #expect(errorMessage { try reopened.unlock(pin: "000003") } == "Too many attempts. Try again in 3600 seconds.")
        clock.advance(seconds: 3600)
        try reopened.unlock(pin: testPIN)
        try reopened.lock()
        _ = try? reopened.unlock(pin: "000001")
        _ = try? reopened.unlock(pin: "000002")
        #expect(errorMessage { try reopened.unlock(pin: "000003") } == "Too many attempts. Try again in 30 seconds.")
    }

    @Test func failureIsCountedBeforeThePINIsChecked() throws {
        // The counter is written before Argon2id runs: simulate a kill mid-check by leaving
        // the incremented counter behind (what a SIGKILL at that point leaves).
        let dir = TempDir()
        defer { dir.remove() }
        try makeNode(dir).close()
        let store = try Store(directory: dir.path)
        try store.setLockState(.init(failures: 2))
        store.close()
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        #expect(try node.status().failedAttempts == 2)
        #expect(errorMessage { try node.unlock(pin: "999999") } == "Too many attempts. Try again in 30 seconds.")
    }

    @Test func threeChecksCutShortLockOutEvenTheRightPIN() throws {
        // Three tries killed during Argon2id leave three failures and no lockout. The next
        // try would be a fourth guess in this window: it starts the lockout instead.
        let dir = TempDir()
        defer { dir.remove() }
        try makeNode(dir).close()
        let store = try Store(directory: dir.path)
        try store.setLockState(.init(failures: 3))
        store.close()
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        #expect(errorMessage { try node.unlock(pin: testPIN) } == "Too many attempts. Try again in 30 seconds.")
        #expect(try node.status().locked)
        #expect(try node.status().lockoutSecondsRemaining == 30)
    }

    @Test func overlappingUnlocksCheckAtMostThreePINs() throws {
        // Hashing slow enough that wrong PINs are still being checked when the right one
        // comes in on another thread: it must not become a fourth (or seventh) guess.
        let dir = TempDir()
        defer { dir.remove() }
        var options = fastOptions()
        options.pinHashing = PINHashing(opsLimit: 3, memLimit: 32 << 20)
        let node = try Node(dataDirectory: dir.path, options: options)
        _ = try node.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        try node.lock()
        let threads = (0..<6).map { i in Thread { _ = try? node.unlock(pin: "99999\(i)") } }
        threads.forEach { $0.start() }
        #expect(eventually {
            let s = try? node.status()
            return (s?.failedAttempts ?? 0) >= 3 || (s?.lockoutSecondsRemaining ?? 0) > 0
        })
        #expect(throws: YaOKError(.lockedOut)) { try node.unlock(pin: testPIN) }
        #expect(eventually { threads.allSatisfy(\.isFinished) })
        #expect(try node.status().locked)
        let checked = try node.withStore { store, _ in
            try store.securityEvents(limit: 100, before: nil, now: 0).filter { $0.kind == .wrongPIN }.count
        }
        #expect(checked <= Node.maxPINAttempts)
    }

    @Test func clockSetBackwardsDoesNotStretchTheLockout() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let clock = TestClock()
        let node = try makeNode(dir, clock: clock)
        try node.lock()
        for pin in ["100001", "100002", "100003"] { _ = try? node.unlock(pin: pin) }
        clock.moveWallClock(seconds: -3600)
        #expect(try node.status().lockoutSecondsRemaining == 30)
    }

    @Test func lockWipesKeys() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        weak var keys: UnlockedKeys?
        weak var databaseKey: SecureBytes?
        node.state.withLock { s in
            keys = s.keys
            databaseKey = s.keys?.contents.databaseKey
        }
        #expect(keys != nil && databaseKey != nil)
        try node.lock()
        // Released means sodium_free ran, which zeroes the guarded pages before unmapping.
        #expect(keys == nil)
        #expect(databaseKey == nil)
        #expect(try node.status().locked)
        #expect(throws: YaOKError(.locked)) { try node.send(to: 1, text: "hi") }
        #expect(throws: YaOKError(.locked)) { try node.securityEvents() }
        #expect(throws: YaOKError(.locked)) { try node.setAutoLock(.never) }
    }

    @Test func platformKeyUnlocksAndPINKeepsWorking() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let key = [UInt8](repeating: 7, count: 32)
        #expect(throws: YaOKError.self) { try node.registerPlatformKey([1, 2, 3]) }
        try node.registerPlatformKey(key)
        try node.lock()
        #expect(throws: YaOKError(.wrongPlatformKey)) { try node.unlock(platformKey: [UInt8](repeating: 8, count: 32)) }
        try node.unlock(platformKey: key)
        #expect(try node.status().platformKeyRegistered)
        try node.lock()
        try node.unlock(pin: testPIN)
        try node.removePlatformKey()
        try node.lock()
        #expect(throws: YaOKError(.noPlatformKey)) { try node.unlock(platformKey: key) }
    }

    @Test func autoLockFiresOnTheEventThread() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let recorder = EventRecorder()
        recorder.attach(to: node)
        #expect(try node.setAutoLock(.never) == .autoLockDisabled)
        #expect(try node.setAutoLock(.after(seconds: 0.05)) == [])
        let event = recorder.wait { $0 == .locked(reason: "auto_lock") }
        #expect(event != nil)
        #expect(try node.status().locked)
        #expect(recorder.allOnEventThread)
        try node.unlock(pin: testPIN)
        #expect(try node.status().autoLock == .after(seconds: 0.05))
        try node.setAutoLock(.never)
        #expect(try node.status().locked == false)
    }

    /// Review finding (issue 11): `yaok chat` polled several times a second and kept the
    /// node unlocked for ever. Reads made inside `withoutActivity` do not hold off auto-lock.
    @Test func passiveReadsDoNotHoldOffAutoLock() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let recorder = EventRecorder()
        recorder.attach(to: node)
        _ = try node.setAutoLock(.after(seconds: 0.5))
        let start = Date()
        var locked = false
        while Date().timeIntervalSince(start) < 5, !locked {
            _ = try? node.withoutActivity { try node.contacts() }
            locked = (try? node.status().locked) ?? false
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(locked, "polling without activity still lets the node auto-lock")
        #expect(Date().timeIntervalSince(start) < 3)
    }

    @Test func resetNeedsConfirmationAndDestroysEverything() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        let bob = try node.addContact(card: cardText("Bob"))
        _ = try node.send(to: bob.id, text: "hello")
        #expect(throws: YaOKError.self) { try node.reset(confirm: false) }
        try node.reset(confirm: true)
        let status = try node.status()
        #expect(status.initialized == false && status.locked)
        _ = try node.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        #expect(try node.contacts().isEmpty)
        #expect(try node.securityEvents().map(\.kind) == [.reset, .pinSetUp])
    }
}
