import Foundation
import Glibc
import Synchronization
import YaOKSupport
@testable import YaOKTransports

/// Plays the kernel's mgmt channel for `BLETransport.start` and `stop` on a machine with no
/// Bluetooth: one end of a SOCK_SEQPACKET socket pair is the transport's `MgmtSocket` (one
/// packet per read, as the real channel; a new pair each time the transport opens it), a
/// thread on the other end answers each command as an adapter hci0 would, and records them. Replies can be delayed per command, to catch
/// waits made under the transport's lock.
final class FakeMgmtKernel: @unchecked Sendable {
    struct Command: Equatable, CustomStringConvertible {
        let op: UInt16
        let index: UInt16
        let parameters: [UInt8]
        var description: String { "op 0x\(String(op, radix: 16)) index \(index) \(parameters)" }
    }

    /// The kernel's end of the current session (-1: none): each `openMgmt` opens a new one.
    private let kernelEnd = Locked<Int32>(-1)
    private let recorded = Locked<[Command]>([])
    private let delays = Locked<[UInt16: Double]>([:])
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// Current settings of hci0 (powered, LE, plus what the test adds: advertising, privacy).
    let settings: Locked<UInt32>
    static let address: [UInt8] = [0x00, 0xAA, 0x01, 0x00, 0x00, 0x00]
    /// Advertising instances in use (Add / Remove Advertising change it; a test may start
    /// with a leftover one). The adapter has 5.
    let instances = Locked<Set<UInt8>>([])

    init(advertisingSetting: Bool = false, privacy: Bool = false) throws {
        var current = Mgmt.Setting.powered | Mgmt.Setting.le
        if advertisingSetting { current |= Mgmt.Setting.advertising }
        if privacy { current |= Mgmt.Setting.privacy }
        settings = Locked(current)
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    /// A new session: the transport's end, non-blocking as the real socket.
    func open() throws -> MgmtSocket {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw POSIXError(.EIO)
        }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        kernelEnd.withLock { end in
            if end >= 0 { Glibc.close(end) }
            end = fds[1]
        }
        return MgmtSocket(fd: fds[0])
    }

    var system: BLESystem {
        BLESystem(openMgmt: { [self] in try open() }, listen: { _, psm, _, _ in
            // A descriptor that never becomes readable stands for the L2CAP listener.
            var pair: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
                throw POSIXError(.EIO)
            }
            FakeMgmtKernel.spareListenerEnds.withLock { $0.append(pair[1]) }
            return (pair[0], psm)
        })
    }

    /// The listener pairs' other ends, kept open so that the listener stays quiet.
    static let spareListenerEnds = Locked<[Int32]>([])

    var commands: [Command] { recorded.withLock { $0 } }

    /// Holds the reply to `op` for `seconds`.
    func delay(_ op: Mgmt.Op, by seconds: Double) { delays.withLock { $0[op.rawValue] = seconds } }

    /// An event from the kernel unasked (New Settings, Device Found …).
    func send(_ event: Mgmt.Event) {
        let packet = Mgmt.encode(event)
        kernelEnd.withLock { end in
            guard end >= 0 else { return }
            _ = packet.withUnsafeBytes { Glibc.write(end, $0.baseAddress, $0.count) }
        }
    }

    func close() {
        stopping.store(true, ordering: .relaxed)
        done.wait()
        kernelEnd.withLock { end in
            if end >= 0 { Glibc.close(end) }
            end = -1
        }
    }

    private func serve() {
        defer { done.signal() }
        var buffer = [UInt8](repeating: 0, count: 1024)
        while !stopping.load(ordering: .relaxed) {
            let fd = kernelEnd.withLock { $0 }
            guard fd >= 0 else {
                usleep(5_000)
                continue
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 20) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 {
                // The transport closed its end: the session is over.
                kernelEnd.withLock { end in
                    if end == fd {
                        Glibc.close(end)
                        end = -1
                    }
                }
                continue
            }
            guard n >= 6 else { continue }
            let op = Mgmt.u16(buffer[...], 0), index = Mgmt.u16(buffer[...], 2)
            let command = Command(op: op, index: index, parameters: Array(buffer[6..<n]))
            recorded.withLock { $0.append(command) }
            if let seconds = delays.withLock({ $0[op] }) { Thread.sleep(forTimeInterval: seconds) }
            send(.commandComplete(index: index, opcode: op, status: 0, data: reply(command)))
        }
    }

    private func reply(_ c: Command) -> [UInt8] {
        switch Mgmt.Op(rawValue: c.op) {
        case .readIndexList:
            return [1, 0, 0, 0]
        case .readInfo:
            let current = settings.withLock { $0 }
            let supported = Mgmt.Setting.powered | Mgmt.Setting.le | Mgmt.Setting.advertising | Mgmt.Setting.privacy
            return Array(FakeMgmtKernel.address.reversed()) + [9, 0x3f, 0x00] + Mgmt.le32(supported) + Mgmt.le32(current)
                + [0, 0, 0] + Array("fake".utf8) + [UInt8](repeating: 0, count: 245) + [UInt8](repeating: 0, count: 11)
        case .setAdvertising:
            let current = settings.withLock { s -> UInt32 in
                if c.parameters.first == 0 { s &= ~Mgmt.Setting.advertising } else { s |= Mgmt.Setting.advertising }
                return s
            }
            return Mgmt.le32(current)
        case .readAdvertisingFeatures:
            let used = instances.withLock { $0.sorted() }
            return Mgmt.le32(0xffff) + [31, 31, 5, UInt8(used.count)] + used
        case .addAdvertising:
            if let instance = c.parameters.first { instances.withLock { _ = $0.insert(instance) } }
            return Array(c.parameters.prefix(1))
        case .removeAdvertising:
            // (The kernel answers "Invalid Parameters" for an instance not there; the
            // transport ignores the status either way.)
            if let instance = c.parameters.first { instances.withLock { if instance == 0 { $0.removeAll() } else { _ = $0.remove(instance) } } }
            return Array(c.parameters.prefix(1))
        case .startDiscovery, .stopDiscovery:
            return Array(c.parameters.prefix(1))
        case nil:
            return []
        }
    }
}
