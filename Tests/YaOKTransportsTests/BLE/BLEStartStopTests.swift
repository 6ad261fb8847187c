import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKTransports

/// `start` and `stop` against a fake of the kernel's mgmt channel (`FakeMgmtKernel`): what
/// start-up asks and advertises, that no wait for the kernel happens under the transport's
/// lock, and that `stop` gives the adapter back as it found it.
@Suite(.serialized) struct BLEStartStopTests {
    typealias Command = FakeMgmtKernel.Command

    static func add(_ op: Mgmt.Op) -> (Command) -> Bool { { $0.op == op.rawValue } }

    /// The kernel holds its answer to Read Controller Information for 0.8 s: meanwhile
    /// `status` and `diagnostics` (which take the lock) answer at once, "starting".
    @Test func noWaitForTheKernelUnderTheLock() throws {
        let kernel = try FakeMgmtKernel()
        defer { kernel.close() }
        kernel.delay(.readInfo, by: 0.8)
        let transport = try BLETransport(options: BLETransport.Options(), system: kernel.system)
        let opener = try FakeOpener()
        let started = DispatchSemaphore(value: 0)
        let failure = Locked<(any Error)?>(nil)
        Thread.detachNewThread {
            do { try transport.start(opener: opener) } catch { failure.withLock { $0 = error } }
            started.signal()
        }
        try waitUntil("the kernel to be asked for the adapter's information") {
            kernel.commands.contains { $0.op == Mgmt.Op.readInfo.rawValue }
        }
        let before = Date()
        let status = transport.status
        _ = transport.diagnostics()
        #expect(Date().timeIntervalSince(before) < 0.4, "status waited for the kernel's answer")
        #expect(status == "Bluetooth: starting")
        #expect(started.wait(timeout: .now() + 5) == .success)
        #expect(failure.withLock { $0 } == nil)
        #expect(transport.status == "Bluetooth: on hci0, 0 links")
        transport.stop()
        #expect(transport.status == "Bluetooth: Disabled")
    }

    /// The advertisement is version 2 with the PSM the listener is bound to.
    @Test func advertisesTheListenersPSM() throws {
        let kernel = try FakeMgmtKernel()
        defer { kernel.close() }
        var options = BLETransport.Options()
        options.psm = 0x0095
        let transport = try BLETransport(options: options, system: kernel.system)
        let opener = try FakeOpener()
        try transport.start(opener: opener)
        defer { transport.stop() }
        let add = try #require(kernel.commands.first(where: Self.add(.addAdvertising)))
        // instance, flags (4), duration, timeout, data length, scan response length, data.
        let data = Array(add.parameters.dropFirst(11))
        let advert = try #require(BLEAdvert(parsing: data))
        #expect(advert.psm == 0x0095 && data.count == BLEAdvert.encodedLength && data[18] == 0x02)
        #expect(transport.diagnostics().serialized.contains("\"psm\":149"))
    }

    /// Found with its "advertising" setting on (turned off: see `prepareAdapter`), the adapter
    /// gets it back at stop, after our instance is removed; our discovery run is stopped.
    @Test func stopGivesTheAdapterBackAsFound() throws {
        let kernel = try FakeMgmtKernel(advertisingSetting: true)
        defer { kernel.close() }
        let transport = try BLETransport(options: BLETransport.Options(), system: kernel.system)
        let opener = try FakeOpener()
        try transport.start(opener: opener)
        let instance = try #require(kernel.commands.first(where: Self.add(.addAdvertising))?.parameters.first)
        #expect(kernel.commands.contains(Command(op: Mgmt.Op.setAdvertising.rawValue, index: 0, parameters: [0])))
        try waitUntil("discovery asked for") { kernel.commands.contains(where: Self.add(.startDiscovery)) }
        let mark = kernel.commands.count
        transport.stop()
        let after = Array(kernel.commands.dropFirst(mark))
        #expect(after == [
            Command(op: Mgmt.Op.stopDiscovery.rawValue, index: 0, parameters: [Mgmt.discoveryTypeLE]),
            Command(op: Mgmt.Op.removeAdvertising.rawValue, index: 0, parameters: [instance]),
            Command(op: Mgmt.Op.setAdvertising.rawValue, index: 0, parameters: [1]),
        ], "\(after)")
        #expect((kernel.settings.withLock { $0 } & Mgmt.Setting.advertising) != 0)
        transport.stop()  // idempotent: nothing more sent
        #expect(kernel.commands.count == mark + 3)
    }

    /// Not found on, the setting is left alone.
    @Test func stopLeavesAnUntouchedSettingAlone() throws {
        let kernel = try FakeMgmtKernel()
        defer { kernel.close() }
        let transport = try BLETransport(options: BLETransport.Options(), system: kernel.system)
        let opener = try FakeOpener()
        try transport.start(opener: opener)
        transport.stop()
        #expect(!kernel.commands.contains(where: Self.add(.setAdvertising)))
        #expect(kernel.commands.last?.op == Mgmt.Op.removeAdvertising.rawValue)
    }

    /// A `stop` while start-up waits for the kernel wins: the start gives back what it did
    /// and throws; the transport is disabled.
    @Test func stopDuringStartUndoesIt() throws {
        let kernel = try FakeMgmtKernel(advertisingSetting: true)
        defer { kernel.close() }
        kernel.delay(.addAdvertising, by: 0.5)
        let transport = try BLETransport(options: BLETransport.Options(), system: kernel.system)
        let opener = try FakeOpener()
        let finished = DispatchSemaphore(value: 0)
        let failure = Locked<String?>(nil)
        Thread.detachNewThread {
            do { try transport.start(opener: opener) } catch { failure.withLock { $0 = "\(error)" } }
            finished.signal()
        }
        try waitUntil("advertising asked for") { kernel.commands.contains(where: Self.add(.addAdvertising)) }
        transport.stop()
        #expect(finished.wait(timeout: .now() + 5) == .success)
        #expect(failure.withLock { $0 }?.contains("disabled while it was starting") == true)
        #expect(transport.status == "Bluetooth: Disabled" && transport.connectionCount == 0)
        let tail = kernel.commands.suffix(2).map(\.op)
        #expect(tail == [Mgmt.Op.removeAdvertising.rawValue, Mgmt.Op.setAdvertising.rawValue])
        // And it can start again.
        try transport.start(opener: opener)
        #expect(transport.status == "Bluetooth: on hci0, 0 links")
        transport.stop()
    }

    /// `stop` returns only once the abandoned start has given the adapter back, so a start
    /// right after it finds the adapter as it was (it used to race the old clean-up).
    @Test func stopWaitsForAnAbandonedStartsUndo() throws {
        let kernel = try FakeMgmtKernel(advertisingSetting: true)
        defer { kernel.close() }
        kernel.delay(.addAdvertising, by: 0.5)
        let transport = try BLETransport(options: BLETransport.Options(), system: kernel.system)
        let opener = try FakeOpener()
        Thread.detachNewThread { try? transport.start(opener: opener) }
        try waitUntil("advertising asked for") { kernel.commands.contains(where: Self.add(.addAdvertising)) }
        transport.stop()
        let tail = kernel.commands.suffix(2).map(\.op)
        #expect(tail == [Mgmt.Op.removeAdvertising.rawValue, Mgmt.Op.setAdvertising.rawValue])
        kernel.delay(.addAdvertising, by: 0)
        try transport.start(opener: opener)
        #expect(transport.status == "Bluetooth: on hci0, 0 links")
        #expect(kernel.commands.last?.op != Mgmt.Op.setAdvertising.rawValue)
        transport.stop()
    }

    /// A node killed before `stop` leaves its advertising instance on the adapter. The next
    /// start takes the same (the highest) instance over, removing it first: one Ya OK
    /// beacon, not two; and `stop` leaves none.
    @Test func aCrashedRunsBeaconIsTakenOver() throws {
        let kernel = try FakeMgmtKernel()
        defer { kernel.close() }
        kernel.instances.withLock { $0 = [5] }  // the crashed run's
        let transport = try BLETransport(options: BLETransport.Options(), system: kernel.system)
        let opener = try FakeOpener()
        try transport.start(opener: opener)
        let ops = kernel.commands.map(\.op)
        let removed = try #require(ops.firstIndex(of: Mgmt.Op.removeAdvertising.rawValue))
        let added = try #require(ops.firstIndex(of: Mgmt.Op.addAdvertising.rawValue))
        #expect(removed < added && kernel.commands[removed].parameters == [5] && kernel.commands[added].parameters.first == 5)
        #expect(kernel.instances.withLock { $0 } == [5])
        transport.stop()
        #expect(kernel.instances.withLock { $0 }.isEmpty)
    }
}

extension BLEStartStopTests {
    /// Every advertising instance in use: the highest may be another program's (bluetoothd
    /// gives its clients the lowest free one), so the start adds none and says so, rather
    /// than removing someone else's advertisement.
    @Test func noFreeInstanceIsNotTakenOver() throws {
        let kernel = try FakeMgmtKernel()
        defer { kernel.close() }
        kernel.instances.withLock { $0 = [1, 2, 3, 4, 5] }
        let transport = try BLETransport(options: BLETransport.Options(), system: kernel.system)
        let opener = try FakeOpener()
        #expect(throws: YaOKError.self) { try transport.start(opener: opener) }
        #expect(transport.status.contains("no free advertising instance"))
        #expect(!kernel.commands.contains { $0.op == Mgmt.Op.removeAdvertising.rawValue && $0.parameters == [5] })
        #expect(kernel.instances.withLock { $0 } == [1, 2, 3, 4, 5])
    }
}
