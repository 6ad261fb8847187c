import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Issue 8 §9: calls that cannot be a PIN check are refused without counting.
@Suite struct UnlockRefusalTests {
    @Test func unlockingAnUnlockedNodeIsRefusedWithoutCounting() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        try node.registerPlatformKey([UInt8](repeating: 7, count: 32))
        for pin in ["000000", "000001", "000002", "000003", testPIN] {
            #expect(throws: YaOKError(.alreadyUnlocked)) { try node.unlock(pin: pin) }
        }
        #expect(throws: YaOKError(.alreadyUnlocked)) { try node.unlock(platformKey: [UInt8](repeating: 7, count: 32)) }
        let status = try node.status()
        #expect(!status.locked && status.failedAttempts == 0 && status.lockoutSecondsRemaining == 0)
        #expect(try !node.securityEvents().contains { $0.kind == .wrongPIN || $0.kind == .lockout })
        try node.lock()
        try node.unlock(pin: testPIN)
    }

    @Test func inputThatCannotBeAPINIsRefusedWithoutCounting() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        try node.lock()
        for input in ["", "1", "12345", "abc"] {
            #expect(throws: YaOKError(.pinTooShort)) { try node.unlock(pin: input) }
        }
        for input in [String(repeating: "1", count: 257), "123\n456", "1234\u{7F}56"] {
            #expect(throws: YaOKError(.invalidArgument)) { try node.unlock(pin: input) }
        }
        #expect(try node.status().failedAttempts == 0)
        try node.unlock(pin: testPIN)
    }
}

/// Issue 8 §1: passphrases, their strength, and binding the vault to a device secret.
@Suite struct PassphraseTests {
    @Test func aPassphraseWorksAndIsComparedInNFC() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        let composed = "caf\u{E9} au lait, s'il vous pla\u{EE}t"
        let result = try node.setup(name: "Alice", pin: composed, confirmation: composed)
        #expect(result.warnings == [])
        #expect(!result.strength.isPIN)
        try node.lock()
        #expect(throws: YaOKError(.wrongPIN)) { try node.unlock(pin: "cafe au lait, s'il vous plait") }
        try node.unlock(pin: "cafe\u{301} au lait, s'il vous plai\u{302}t")  // decomposed
    }

    @Test func tooShortSaysPINOrPassphraseAndControlCharactersAreRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        #expect(errorMessage { try node.setup(name: "Alice", pin: "12345", confirmation: "12345") } == "PIN must be at least 6 digits")
        #expect(errorMessage { try node.setup(name: "Alice", pin: "", confirmation: "") } == "PIN must be at least 6 digits")
        #expect(errorMessage { try node.setup(name: "Alice", pin: "ab3", confirmation: "ab3") }
                == "Passphrase must be at least 6 characters")
        #expect(throws: YaOKError(.pinTooShort)) { try node.setup(name: "Alice", pin: "😀😀😀😀😀", confirmation: "😀😀😀😀😀") }
        #expect(throws: YaOKError(.invalidArgument)) { try node.setup(name: "Alice", pin: "abc\tdef", confirmation: "abc\tdef") }
        #expect(throws: YaOKError(.invalidArgument)) {
            try node.setup(name: "Alice", pin: String(repeating: "x", count: 257), confirmation: String(repeating: "x", count: 257))
        }
        #expect(try node.status().initialized == false)
        // Six emoji, spaces and punctuation are fine; a 256-byte passphrase is the limit.
        _ = try SecretStrength.check("😀😀😀😀😀😀")
        _ = try SecretStrength.check(String(repeating: "x", count: 256))
        _ = try SecretStrength.check("  .  .  ")
    }

    @Test(arguments: [
        ("135790", SecretStrength.Level.weak, 19, true),
        ("000000", .weak, 4, true),
        ("1234567890", .weak, 5, true),
        ("8203956147", .weak, 33, true),
        ("820395614729", .weak, 39, true),
        ("password", .weak, 12, false),
        ("Tr0ub4dor&3", .fair, 46, false),
        ("correct horse battery staple", .fair, 55, false),
        ("correct horse battery staple cloud", .strong, 68, false),
        ("Xk9#mQ2$vL7!", .fair, 56, false),
        ("Xk9#mQ2$vL7!wR4%", .strong, 74, false),
    ])
    func strengthEstimates(secret: String, level: SecretStrength.Level, bits: Int, isPIN: Bool) throws {
        let strength = try SecretStrength.check(secret)
        #expect(strength.level == level)
        #expect(strength.estimatedBits == bits)
        #expect(strength.isPIN == isPIN)
    }

    @Test func setupReportsTheStrength() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        let setup = try node.setup(name: "Bob", pin: "correct horse battery staple", confirmation: "correct horse battery staple")
        #expect(setup.strength == SecretStrength(level: .fair, estimatedBits: 55, isPIN: false))
        #expect(setup.strength.json.serialized == #"{"strength":"fair","estimated_bits":55,"is_pin":false}"#)
        #expect(!setup.deviceBound)
    }
}

@Suite struct DeviceSecretTests {
    let secret = [UInt8](repeating: 0xA5, count: 32)

    @Test func aBoundVaultNeedsItsDeviceSecretAndTheFileAloneOpensNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var node: Node? = try Node(dataDirectory: dir.path, options: fastOptions())
        try node?.setDeviceSecret(secret)
        let result = try #require(node).setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        #expect(result.deviceBound)
        #expect(try node?.status().vault?.deviceBound == true)
        node?.close()
        node = nil

        // What an attacker with the files has: the right PIN does not open the vault.
        let store = try Store(directory: dir.path)
        let vault = try #require(try store.vault(.pin))
        #expect(try vault.open(pin: testPIN, deviceSecret: nil) == nil)
        #expect(try vault.open(pin: testPIN, deviceSecret: SecureBytes(copying: [UInt8](repeating: 0, count: 32))) == nil)
        #expect(try vault.open(pin: testPIN, deviceSecret: SecureBytes(copying: secret)) != nil)
        store.close()

        let reopened = try Node(dataDirectory: dir.path, options: fastOptions())
        #expect(try reopened.status().vault?.deviceBound == true)
        #expect(throws: YaOKError(.deviceSecretRequired)) { try reopened.unlock(pin: testPIN) }
        try reopened.setDeviceSecret([UInt8](repeating: 0x5A, count: 32))
        #expect(throws: YaOKError(.wrongDeviceSecret)) { try reopened.unlock(pin: testPIN) }
        #expect(try reopened.status().failedAttempts == 0)
        try reopened.setDeviceSecret(secret)
        #expect(throws: YaOKError(.wrongPIN)) { try reopened.unlock(pin: "111111") }
        try reopened.unlock(pin: testPIN)
        #expect(throws: YaOKError(.invalidArgument)) { try reopened.setDeviceSecret([1, 2, 3]) }
    }

    @Test func unbindingTheVaultInTheFileDoesNotLetThePINAloneIn() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        try node.setDeviceSecret(secret)
        _ = try node.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        node.close()
        let store = try Store(directory: dir.path)
        try store.db.execute("UPDATE vault SET device_check = NULL")
        store.close()
        let reopened = try Node(dataDirectory: dir.path, options: fastOptions())
        #expect(throws: YaOKError(.wrongPIN)) { try reopened.unlock(pin: testPIN) }
        try reopened.setDeviceSecret(secret)
        #expect(throws: YaOKError(.wrongPIN)) { try reopened.unlock(pin: testPIN) }
    }

    @Test func anUnboundVaultIgnoresADeviceSecret() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        try node.lock()
        try node.setDeviceSecret(secret)
        try node.unlock(pin: testPIN)
        try node.setDeviceSecret(nil)
        #expect(try node.status().vault?.deviceBound == false)
    }
}

/// Issue 8 §8: test-only costs stay in tests.
@Suite struct TestOnlyCostsTests {
    /// The options a production process has: default costs, no opt-in.
    private func productionOptions() -> Node.Options { Node.Options() }

    @Test func aVaultBelowTheProductionMinimumIsRefusedWithoutTheOptIn() throws {
        guard !PINHashing.testCostsAllowedByEnvironment else { return }  // YAOK_TEST_INSECURE_KDF=1 set here
        let dir = TempDir()
        defer { dir.remove() }
        try makeNode(dir).close()
        let node = try Node(dataDirectory: dir.path, options: productionOptions())
        let vault = try #require(try node.status().vault)
        #expect(vault.pinHashing == .insecureFastForTestsOnly && !vault.meetsProductionMinimum)
        #expect(errorMessage { try node.unlock(pin: testPIN) }?.contains("test-only PIN hashing costs") == true)
        #expect(try node.status().failedAttempts == 0)
        #expect(try node.status().locked)
    }

    @Test func setupRefusesTestCostsWithoutTheOptIn() throws {
        guard !PINHashing.testCostsAllowedByEnvironment else { return }
        let dir = TempDir()
        defer { dir.remove() }
        var options = productionOptions()
        options.pinHashing = .insecureFastForTestsOnly
        let node = try Node(dataDirectory: dir.path, options: options)
        #expect(throws: YaOKError(.invalidArgument)) { try node.setup(name: "Alice", pin: testPIN, confirmation: testPIN) }
        #expect(try node.status().initialized == false)
    }

    @Test func onlyTheExactValueOneOptsIn() {
        #expect(PINHashing.testCostsAllowed(environmentValue: "1"))
        for value in [nil, "", "0", "yes", "true", " 1"] as [String?] {
            #expect(!PINHashing.testCostsAllowed(environmentValue: value))
        }
        #expect(PINHashing.standard.meetsProductionMinimum)
        #expect(!PINHashing(opsLimit: 8, memLimit: 32 << 20).meetsProductionMinimum)
    }

    @Test func statusShowsTheProductionCosts() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try Node(dataDirectory: dir.path, options: productionOptions())
        #expect(try node.status().vault == nil)
        #expect(try node.status().json.serialized.contains(#""vault":null"#))
        _ = try node.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        let vault = try #require(try node.status().vault)
        #expect(vault == VaultStatus(pinHashing: .standard, meetsProductionMinimum: true, deviceBound: false))
        #expect(try node.status().json.serialized.contains(
            #""vault":{"kdf":"argon2id13","ops_limit":2,"mem_limit":67108864,"meets_production_minimum":true,"device_bound":false}"#))
    }
}
