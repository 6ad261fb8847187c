import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKTransports

/// What an observer can follow (PROTOCOL.md §9.3): the transport reads from mgmt whether LE
/// privacy is on, says so when it is not (with what to do), and with privacy on changes the
/// advertising address together with the token. Against the fake mgmt kernel.
@Suite(.serialized) struct BLEPrivacyTests {
    @Test func aFixedAddressIsReported() throws {
        let kernel = try FakeMgmtKernel(privacy: false)
        defer { kernel.close() }
        let transport = try BLETransport(options: BLETransport.Options(), system: kernel.system)
        let opener = try FakeOpener()
        try transport.start(opener: opener)
        defer { transport.stop() }
        let advisory = try #require(transport.advisories.first)
        #expect(advisory.hasPrefix("Bluetooth: advertising with hci0's fixed address; an observer can follow this device"))
        #expect(advisory.contains("enable LE privacy") && advisory.contains("btmgmt --index 0 privacy on"))
        let d = transport.diagnostics().serialized
        #expect(d.contains("\"advisories\":[\"Bluetooth: advertising with hci0") && d.contains("\"privacy\":false"))

        // Privacy turned on (the adapter was off meanwhile): the advisory goes.
        kernel.send(.newSettings(index: 0, settings: Mgmt.Setting.powered | Mgmt.Setting.le | Mgmt.Setting.privacy))
        try waitUntil("the advisory to go") { transport.advisories.isEmpty }
        #expect(transport.diagnostics().serialized.contains("\"privacy\":true"))
    }

    @Test func privacyOnIsNotReported() throws {
        let kernel = try FakeMgmtKernel(privacy: true)
        defer { kernel.close() }
        let transport = try BLETransport(options: BLETransport.Options(), system: kernel.system)
        let opener = try FakeOpener()
        try transport.start(opener: opener)
        #expect(transport.advisories.isEmpty)
        #expect(transport.diagnostics().serialized.contains("\"advisories\":[]"))
        transport.stop()
        #expect(transport.advisories.isEmpty)  // and none once stopped
    }

    /// With privacy on, a new token goes out as a new advertising instance (removed, added):
    /// the kernel gives a new instance a new resolvable private address, so the address and
    /// the token change together. Without privacy the instance is updated in place.
    @Test func withPrivacyTheAddressChangesWithTheToken() throws {
        for privacy in [true, false] {
            let kernel = try FakeMgmtKernel(privacy: privacy)
            defer { kernel.close() }
            let transport = try BLETransport(options: BLETransport.Options(), system: kernel.system)
            let opener = try FakeOpener()
            try transport.start(opener: opener)
            try waitUntil("discovery asked for") { kernel.commands.contains { $0.op == Mgmt.Op.startDiscovery.rawValue } }
            let mark = kernel.commands.count
            let instance = transport.state.withLock { s -> UInt8 in
                transport.rotateTokenLocked(&s)
                return s.adapter!.instance
            }
            try waitUntil("the new advertisement") { kernel.commands.dropFirst(mark).contains { $0.op == Mgmt.Op.addAdvertising.rawValue } }
            let ops = kernel.commands.dropFirst(mark).map(\.op).filter {
                $0 == Mgmt.Op.addAdvertising.rawValue || $0 == Mgmt.Op.removeAdvertising.rawValue
            }
            if privacy {
                #expect(ops == [Mgmt.Op.removeAdvertising.rawValue, Mgmt.Op.addAdvertising.rawValue])
                #expect(kernel.commands.dropFirst(mark).first { $0.op == Mgmt.Op.removeAdvertising.rawValue }?.parameters == [instance])
            } else {
                #expect(ops == [Mgmt.Op.addAdvertising.rawValue])
            }
            transport.stop()
        }
    }
}
