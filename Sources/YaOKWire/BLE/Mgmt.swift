/// The kernel's Bluetooth management interface (BlueZ doc/mgmt-api: an HCI socket bound to
/// HCI_CHANNEL_CONTROL): the commands and events the BLE transport uses, encoded and
/// decoded here. Pure (the wire target): the tests check it without Bluetooth and the fuzzer
/// feeds it anything (scripts/fuzz); the socket is `MgmtSocket`, in the transport.
///
/// Every packet, either way: `opcode or event (u16) || controller index (u16) ||
/// parameter length (u16) || parameters`, little-endian.
package enum Mgmt {
    package static let indexNone: UInt16 = 0xffff

    package enum Op: UInt16, Sendable {
        case readIndexList = 0x0003
        case readInfo = 0x0004
        case startDiscovery = 0x0023
        case stopDiscovery = 0x0024
        case setAdvertising = 0x0029
        case readAdvertisingFeatures = 0x003d
        case addAdvertising = 0x003e
        case removeAdvertising = 0x003f
    }

    package enum Status: UInt8 {
        case success = 0x00, unknownCommand = 0x01, failed = 0x03, busy = 0x0a, rejected = 0x0b
        case notSupported = 0x0c, invalidParameters = 0x0d, notPowered = 0x0f, invalidIndex = 0x11
        case rfkilled = 0x12, permissionDenied = 0x14

        package static func text(_ raw: UInt8) -> String {
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
    package enum Setting {
        package static let powered: UInt32 = 1 << 0
        package static let le: UInt32 = 1 << 9
        package static let advertising: UInt32 = 1 << 10
        /// LE privacy: the kernel advertises (and connects) from a resolvable private
        /// address that it renews, not from the adapter's own.
        package static let privacy: UInt32 = 1 << 13
        package static let staticAddress: UInt32 = 1 << 15
    }

    /// Add Advertising flags.
    package enum AdvertisingFlag {
        package static let connectable: UInt32 = 1 << 0
        package static let discoverable: UInt32 = 1 << 1
    }

    /// Device Found flags.
    package enum DeviceFoundFlag {
        /// The advertisement was not connectable (ADV_NONCONN_IND, ADV_SCAN_IND).
        package static let notConnectable: UInt32 = 1 << 2
    }

    /// Start Discovery's address types: LE public and LE random.
    package static let discoveryTypeLE: UInt8 = (1 << 1) | (1 << 2)

    package enum Event: Equatable, Sendable {
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

    package struct ControllerInfo: Equatable {
        package let address: BLEAddress
        package let supported: UInt32
        package let current: UInt32
        /// The adapter's name, as set (not advertised: the transport never sends a name).
        package let name: String

        /// The kernel advertises from a resolvable private address it renews.
        package var privacy: Bool { (current & Setting.privacy) != 0 }
    }

    package struct AdvertisingFeatures: Equatable {
        package let maxDataLength: Int
        package let maxInstances: Int
        package let instances: [UInt8]

        package init(maxDataLength: Int, maxInstances: Int, instances: [UInt8]) {
            self.maxDataLength = maxDataLength
            self.maxInstances = maxInstances
            self.instances = instances
        }
    }

    // MARK: - Encoding

    package static func command(_ op: Op, index: UInt16, _ parameters: [UInt8] = []) -> [UInt8] {
        le16(op.rawValue) + le16(index) + le16(UInt16(parameters.count)) + parameters
    }

    /// Add Advertising: connectable, with the Flags structure (general discoverable), no
    /// timeout, no scan response.
    package static func addAdvertising(index: UInt16, instance: UInt8, data: [UInt8]) -> [UInt8] {
        command(.addAdvertising, index: index, addAdvertisingParameters(instance: instance, data: data))
    }

    package static func addAdvertisingParameters(instance: UInt8, data: [UInt8]) -> [UInt8] {
        let flags = AdvertisingFlag.connectable | AdvertisingFlag.discoverable
        return [instance] + le32(flags) + le16(0) + le16(0) + [UInt8(data.count), 0] + data
    }

    package static func removeAdvertising(index: UInt16, instance: UInt8) -> [UInt8] {
        command(.removeAdvertising, index: index, [instance])
    }

    /// An event as the kernel writes it: what `parse` reads (the tests' fake kernel, and the
    /// fuzzer's round trip). `.other` has no parameters.
    package static func encode(_ event: Event) -> [UInt8] {
        func packet(_ code: UInt16, _ index: UInt16, _ parameters: [UInt8]) -> [UInt8] {
            le16(code) + le16(index) + le16(UInt16(parameters.count)) + parameters
        }
        switch event {
        case .commandComplete(let index, let opcode, let status, let data):
            return packet(0x0001, index, le16(opcode) + [status] + data)
        case .commandStatus(let index, let opcode, let status):
            return packet(0x0002, index, le16(opcode) + [status])
        case .indexAdded(let index):
            return packet(0x0004, index, [])
        case .indexRemoved(let index):
            return packet(0x0005, index, [])
        case .newSettings(let index, let settings):
            return packet(0x0006, index, le32(settings))
        case .deviceFound(let index, let address, let rssi, let flags, let eir):
            return packet(0x0012, index, address.littleEndian + [address.kind.rawValue, UInt8(bitPattern: rssi)]
                          + le32(flags) + le16(UInt16(eir.count)) + eir)
        case .discovering(let index, let type, let on):
            return packet(0x0013, index, [type, on ? 1 : 0])
        case .other(let index, let code):
            return packet(code, index, [])
        }
    }

    // MARK: - Decoding

    /// One packet as read from the socket (a read returns exactly one). nil when shorter
    /// than its header says.
    package static func parse(_ p: ArraySlice<UInt8>) -> Event? {
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

    package static func parseIndexList(_ d: [UInt8]) -> [UInt16]? {
        guard d.count >= 2 else { return nil }
        let n = Int(u16(d[...], 0))
        guard d.count >= 2 + 2 * n else { return nil }
        return (0..<n).map { u16(d[...], 2 + 2 * $0) }
    }

    package static func parseInfo(_ d: [UInt8]) -> ControllerInfo? {
        guard d.count >= 20 else { return nil }
        let supported = u32(d[...], 9), current = u32(d[...], 13)
        let nameBytes = d.count > 20 ? Array(d[20..<min(d.count, 20 + 249)].prefix { $0 != 0 }) : []
        // With no public address (or the static address setting on) LE uses the static
        // random address; it is not in this reply, so the address stays what it says.
        let kind: BLEAddress.Kind = (current & Setting.staticAddress) != 0 || d[0..<6].allSatisfy({ $0 == 0 }) ? .leRandom : .lePublic
        return ControllerInfo(address: BLEAddress(littleEndian: d[0..<6], kind: kind), supported: supported, current: current,
                              name: String(decoding: nameBytes, as: UTF8.self))
    }

    package static func parseAdvertisingFeatures(_ d: [UInt8]) -> AdvertisingFeatures? {
        guard d.count >= 8 else { return nil }
        let count = Int(d[7])
        guard d.count >= 8 + count else { return nil }
        return AdvertisingFeatures(maxDataLength: Int(d[4]), maxInstances: Int(d[6]), instances: Array(d[8..<(8 + count)]))
    }

    package static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
    package static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xff) } }
    package static func u16(_ b: ArraySlice<UInt8>, _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    package static func u32(_ b: ArraySlice<UInt8>, _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
}

extension String {
    /// "0x2a".
    package init(format2 value: UInt8) {
        let s = String(value, radix: 16)
        self = "0x" + (s.count == 1 ? "0" + s : s)
    }
}
