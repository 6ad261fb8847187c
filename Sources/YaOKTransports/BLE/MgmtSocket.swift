import Glibc
import CBluetooth
import YaOKSupport
import YaOKWire

/// The mgmt socket (the codec is `Mgmt`, in the wire target): non-blocking, close-on-exec.
/// `request` waits for a command's reply — only while the descriptor is off the event loop
/// (start-up, and `stop` restoring the adapter) and never under the transport's lock;
/// otherwise commands are sent with `send` and their replies arrive as events.
struct MgmtSocket {
    let fd: Int32

    /// Opens and binds the control channel. Throws `BLEUnavailable` for the reasons a
    /// person can act on (no kernel support, no permission).
    static func open() throws -> MgmtSocket {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                        BTPROTO_HCI)
        guard fd >= 0 else {
            let code = errno
            throw BLEUnavailable.from(errno: code, doing: "socket(AF_BLUETOOTH)")
        }
        var address = sockaddr_hci()
        address.hci_family = sa_family_t(AF_BLUETOOTH)
        address.hci_dev = Mgmt.indexNone
        address.hci_channel = UInt16(HCI_CHANNEL_CONTROL)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw BLEUnavailable.from(errno: code, doing: "binding the Bluetooth management channel")
        }
        return MgmtSocket(fd: fd)
    }

    func close() { _ = Glibc.close(fd) }

    /// Writes one command. Returns errno on failure (the kernel takes a command whole or not).
    @discardableResult
    func send(_ packet: [UInt8]) -> Int32? {
        let n = packet.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        return n == packet.count ? nil : (n < 0 ? errno : EIO)
    }

    /// Reads one packet; nil when none is waiting (or on error).
    func read(into buffer: inout [UInt8]) -> ArraySlice<UInt8>? {
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n > 0 { return buffer[0..<n] }
            if n < 0 && errno == EINTR { continue }
            return nil
        }
    }

    /// Sends a command and waits (up to `timeout` s) for its Command Complete or Command
    /// Status; events read meanwhile go to `other`. Returns (status, reply data). Blocks:
    /// never call it holding the transport's lock.
    func request(_ op: Mgmt.Op, index: UInt16, _ parameters: [UInt8] = [], timeout: Double = 3,
                 other: (Mgmt.Event) -> Void = { _ in }) throws -> (UInt8, [UInt8]) {
        if let code = send(Mgmt.command(op, index: index, parameters)) {
            throw BLEUnavailable.from(errno: code, doing: "a Bluetooth management command")
        }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let deadline = Clock.milliseconds() + Int64(timeout * 1000)
        while true {
            let left = deadline - Clock.milliseconds()
            guard left > 0 else {
                throw BLEUnavailable("the kernel did not answer a Bluetooth management command in time",
                                     guidance: "check `dmesg` for Bluetooth errors")
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32(min(left, 1000)))
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
