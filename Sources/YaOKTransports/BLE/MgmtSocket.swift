import Glibc
import CBluetooth
import YaOKSupport
import YaOKSystem
import YaOKWire

/// The mgmt socket (the codec is `Mgmt`, in the wire target): non-blocking, close-on-exec,
/// its system calls through `YaOKSystem.Socket` (errno read inside each; Glibc only for
/// the constants).
/// `request` waits for a command's reply — only while the descriptor is off the event loop
/// (start-up, and `stop` restoring the adapter) and never under the transport's lock;
/// otherwise commands are sent with `send` and their replies arrive as events.
struct MgmtSocket {
    let fd: Int32

    /// Opens and binds the control channel. Throws `BLEUnavailable` for the reasons a
    /// person can act on (no kernel support, no permission).
    static func open() throws -> MgmtSocket {
        let fd: Int32
        switch Socket.open(domain: AF_BLUETOOTH, type: Int32(SOCK_RAW.rawValue), protocol: BTPROTO_HCI) {
        case .success(let opened): fd = opened
        case .failure(let failure): throw BLEUnavailable.from(errno: failure.code, doing: "socket(AF_BLUETOOTH)")
        }
        var address = sockaddr_hci()
        address.hci_family = sa_family_t(AF_BLUETOOTH)
        address.hci_dev = Mgmt.indexNone
        address.hci_channel = UInt16(HCI_CHANNEL_CONTROL)
        if let failure = Socket.bind(fd, address) {
            Socket.close(fd)
            throw BLEUnavailable.from(errno: failure.code, doing: "binding the Bluetooth management channel")
        }
        return MgmtSocket(fd: fd)
    }

    func close() { Socket.close(fd) }

    /// Writes one command. Returns why not on failure (the kernel takes a command whole or not).
    @discardableResult
    func send(_ packet: [UInt8]) -> Errno? {
        Socket.writePacket(fd, packet)
    }

    /// Reads one packet; nil when none is waiting (or on error).
    func read(into buffer: inout [UInt8]) -> ArraySlice<UInt8>? {
        guard case .bytes(let n) = Socket.receive(fd, into: &buffer) else { return nil }
        return buffer[0..<n]
    }

    /// Sends a command and waits (up to `timeout` s) for its Command Complete or Command
    /// Status; events read meanwhile go to `other`. Returns (status, reply data). Blocks:
    /// never call it holding the transport's lock.
    func request(_ op: Mgmt.Op, index: UInt16, _ parameters: [UInt8] = [], timeout: Double = 3,
                 other: (Mgmt.Event) -> Void = { _ in }) throws -> (UInt8, [UInt8]) {
        if let failure = send(Mgmt.command(op, index: index, parameters)) {
            throw BLEUnavailable.from(errno: failure.code, doing: "a Bluetooth management command")
        }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let deadline = Clock.milliseconds() + Int64(timeout * 1000)
        while true {
            let left = deadline - Clock.milliseconds()
            guard left > 0 else {
                throw BLEUnavailable("the kernel did not answer a Bluetooth management command in time",
                                     guidance: "check `dmesg` for Bluetooth errors")
            }
            _ = Socket.waitReadable(fd, milliseconds: Int32(min(left, 1000)))
            while let packet = read(into: &buffer) {
                guard let event = Mgmt.parse(packet) else { continue }
                switch event {
                case .commandComplete(let i, let opcode, let status, let data) where i == index && opcode == op.rawValue:
                    return (status, data)
                case .commandStatus(let i, let opcode, let status) where i == index && opcode == op.rawValue:
                    return (status, [])
                default:
                    other(event)
                }
            }
        }
    }
}
