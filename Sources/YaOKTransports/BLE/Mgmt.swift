import Glibc
import CBluetooth
import YaOKSupport

/// The kernel's Bluetooth management interface (BlueZ doc/mgmt-api: an HCI socket bound to
/// HCI_CHANNEL_CONTROL): the commands and events the BLE transport uses, encoded and
/// decoded here (pure, so the tests check them without Bluetooth), and the socket.
///
/// Every packet, either way: `opcode or event (u16) || controller index (u16) ||
/// parameter length (u16) || parameters`, little-endian.
enum Mgmt {
    static let indexNone: UInt16 = 0xffff

    enum Op: UInt16 {
        case readIndexList = 0x0003
        case readInfo = 0x0004
        case startDiscovery = 0x0023
        case stopDiscovery = 0x0024
        case setAdvertising = 0x0029
        case readAdvertisingFeatures = 0x003d
        case addAdvertising = 0x003e
        case removeAdvertising = 0x003f
    }

    enum Status: UInt8 {
        case success = 0x00, unknownCommand = 0x01, failed = 0x03, busy = 0x0a, rejected = 0x0b
        case notSupported = 0x0c, invalidParameters = 0x0d, notPowered = 0x0f, invalidIndex = 0x11
        case rfkilled = 0x12, permissionDenied = 0x14

        static func text(_ raw: UInt8) -> String {
            switch Status(rawValue: raw) {
            case .success: return "success"
            case .unknownCommand: return "unknown command (kernel too old)"
            case .failed: return "failed"
            case .busy: return "busy"
            case .rejected: return "rejected"
            case .notSupported: return "not supported"
            case .invalidParameters: return "invalid parameters"
            case .notPowered: return "adapter powered off"
            case .invalidIndex: return "no such adapter"
            case .rfkilled: return "blocked by rfkill"
            case .permissionDenied: return "permission denied"
            case nil: return String(format2: raw)
            }
        }
    }

    /// Settings bits (Read Controller Information, New Settings).
    enum Setting {
        static let powered: UInt32 = 1 << 0
        static let le: UInt32 = 1 << 9
        static let advertising: UInt32 = 1 << 10
        static let staticAddress: UInt32 = 1 << 15
    }

    /// Add Advertising flags.
    enum AdvertisingFlag {
        static let connectable: UInt32 = 1 << 0
        static let discoverable: UInt32 = 1 << 1
    }

    /// Start Discovery's address types: LE public and LE random.
    static let discoveryTypeLE: UInt8 = (1 << 1) | (1 << 2)

    enum Event: Equatable {
        case commandComplete(index: UInt16, opcode: UInt16, status: UInt8, data: [UInt8])
        case commandStatus(index: UInt16, opcode: UInt16, status: UInt8)
        case indexAdded(index: UInt16)
        case indexRemoved(index: UInt16)
        case newSettings(index: UInt16, settings: UInt32)
        case deviceFound(index: UInt16, address: BLEAddress, rssi: Int8, flags: UInt32, eir: [UInt8])
        case discovering(index: UInt16, type: UInt8, on: Bool)
        /// Anything else (or a known event with parameters too short to read: ignored).
        case other(index: UInt16, code: UInt16)
    }

    struct ControllerInfo: Equatable {
        let address: BLEAddress
        let supported: UInt32
        let current: UInt32
        /// The adapter's name, as set (not advertised: the transport never sends a name).
        let name: String
    }

    struct AdvertisingFeatures: Equatable {
        let maxDataLength: Int
        let maxInstances: Int
        let instances: [UInt8]
    }

    // MARK: - Encoding

    static func command(_ op: Op, index: UInt16, _ parameters: [UInt8] = []) -> [UInt8] {
        le16(op.rawValue) + le16(index) + le16(UInt16(parameters.count)) + parameters
    }

    /// Add Advertising: connectable, with the Flags structure (general discoverable), no
    /// timeout, no scan response.
    static func addAdvertising(index: UInt16, instance: UInt8, data: [UInt8]) -> [UInt8] {
        command(.addAdvertising, index: index, addAdvertisingParameters(instance: instance, data: data))
    }

    static func addAdvertisingParameters(instance: UInt8, data: [UInt8]) -> [UInt8] {
        let flags = AdvertisingFlag.connectable | AdvertisingFlag.discoverable
        return [instance] + le32(flags) + le16(0) + le16(0) + [UInt8(data.count), 0] + data
    }

    // MARK: - Decoding

    /// One packet as read from the socket (a read returns exactly one). nil when shorter
    /// than its header says.
    static func parse(_ p: ArraySlice<UInt8>) -> Event? {
        guard p.count >= 6 else { return nil }
        let s = p.startIndex
        let code = u16(p, s), index = u16(p, s + 2), length = Int(u16(p, s + 4))
        guard p.count >= 6 + length else { return nil }
        let b = p[(s + 6)..<(s + 6 + length)]
        let o = b.startIndex
        switch code {
        case 0x0001 where b.count >= 3:
            return .commandComplete(index: index, opcode: u16(b, o), status: b[o + 2], data: Array(b[(o + 3)...]))
        case 0x0002 where b.count >= 3:
            return .commandStatus(index: index, opcode: u16(b, o), status: b[o + 2])
        case 0x0004:
            return .indexAdded(index: index)
        case 0x0005:
            return .indexRemoved(index: index)
        case 0x0006 where b.count >= 4:
            return .newSettings(index: index, settings: u32(b, o))
        case 0x0012 where b.count >= 14:
            let eirLength = Int(u16(b, o + 12))
            guard b.count >= 14 + eirLength, let kind = BLEAddress.Kind(rawValue: b[o + 6]) else { return .other(index: index, code: code) }
            return .deviceFound(index: index, address: BLEAddress(littleEndian: b[o..<(o + 6)], kind: kind),
                                rssi: Int8(bitPattern: b[o + 7]), flags: u32(b, o + 8),
                                eir: Array(b[(o + 14)..<(o + 14 + eirLength)]))
        case 0x0013 where b.count >= 2:
            return .discovering(index: index, type: b[o], on: b[o + 1] != 0)
        default:
            return .other(index: index, code: code)
        }
    }

    static func parseIndexList(_ d: [UInt8]) -> [UInt16]? {
        guard d.count >= 2 else { return nil }
        let n = Int(u16(d[...], 0))
        guard d.count >= 2 + 2 * n else { return nil }
        return (0..<n).map { u16(d[...], 2 + 2 * $0) }
    }

    static func parseInfo(_ d: [UInt8]) -> ControllerInfo? {
        guard d.count >= 20 else { return nil }
        let supported = u32(d[...], 9), current = u32(d[...], 13)
        let nameBytes = d.count > 20 ? Array(d[20..<min(d.count, 20 + 249)].prefix { $0 != 0 }) : []
        // With no public address (or the static address setting on) LE uses the static
        // random address; it is not in this reply, so the address stays what it says.
        let kind: BLEAddress.Kind = (current & Setting.staticAddress) != 0 || d[0..<6].allSatisfy({ $0 == 0 }) ? .leRandom : .lePublic
        return ControllerInfo(address: BLEAddress(littleEndian: d[0..<6], kind: kind), supported: supported, current: current,
                              name: String(decoding: nameBytes, as: UTF8.self))
    }

    static func parseAdvertisingFeatures(_ d: [UInt8]) -> AdvertisingFeatures? {
        guard d.count >= 8 else { return nil }
        let count = Int(d[7])
        guard d.count >= 8 + count else { return nil }
        return AdvertisingFeatures(maxDataLength: Int(d[4]), maxInstances: Int(d[6]), instances: Array(d[8..<(8 + count)]))
    }

    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xff) } }
    static func u16(_ b: ArraySlice<UInt8>, _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    static func u32(_ b: ArraySlice<UInt8>, _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
}

extension String {
    /// "0x2a".
    init(format2 value: UInt8) {
        let s = String(value, radix: 16)
        self = "0x" + (s.count == 1 ? "0" + s : s)
    }
}

/// The mgmt socket: non-blocking, close-on-exec. `request` (start-up only, before the
/// descriptor is on the event loop) waits for a command's reply; afterwards commands are
/// sent with `send` and their replies arrive as events.
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
    /// Status; events read meanwhile go to `other`. Returns (status, reply data).
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
