import Glibc
import YaOKSupport
import YaOKWire

/// Why Bluetooth cannot be used here, and what a person can do about it (AC-040-03). The
/// transport throws it from `start` as a `YaOKError` whose message is
/// "Bluetooth unavailable: <reason> (<guidance>)"; the node then reports the transport as
/// failed with that message and keeps running its other transports.
struct BLEUnavailable: Error, Equatable, CustomStringConvertible {
    let reason: String
    let guidance: String

    init(_ reason: String, guidance: String) {
        self.reason = reason
        self.guidance = guidance
    }

    var message: String { "Bluetooth unavailable: \(reason) (\(guidance))" }
    var description: String { message }
    var error: YaOKError { YaOKError(.linkFailed, message) }

    /// A failed socket call, by errno: no kernel support, no permission, or the system's reason.
    static func from(errno code: Int32, doing what: String) -> BLEUnavailable {
        let system = String(cString: strerror(code))
        switch code {
        case EAFNOSUPPORT, EPROTONOSUPPORT, ESOCKTNOSUPPORT:
            return BLEUnavailable("this kernel has no Bluetooth support (\(what): \(system))",
                                  guidance: "load it with `modprobe bluetooth` or use a kernel built with Bluetooth; the other transports keep running")
        case EPERM, EACCES:
            return BLEUnavailable("no permission to use Bluetooth (\(what): \(system))",
                                  guidance: "run as root or give the program CAP_NET_ADMIN, e.g. `setcap cap_net_admin+ep yaok`")
        default:
            return BLEUnavailable("\(what) failed: \(system)",
                                  guidance: "check that Bluetooth works (`btmgmt info`) and `dmesg` for errors")
        }
    }

    /// A mgmt command's failure status.
    static func from(status: UInt8, doing what: String, adapter: String) -> BLEUnavailable {
        switch Mgmt.Status(rawValue: status) {
        case .permissionDenied:
            return BLEUnavailable("no permission to control \(adapter) (\(what): permission denied)",
                                  guidance: "run as root or give the program CAP_NET_ADMIN, e.g. `setcap cap_net_admin+ep yaok`")
        case .notPowered:
            return poweredOff(adapter)
        case .rfkilled:
            return rfkilled(adapter)
        case .invalidIndex:
            return BLEUnavailable("\(adapter) has gone", guidance: "plug the adapter in again, or choose another with --ble-adapter")
        default:
            return BLEUnavailable("\(adapter): \(what) failed: \(Mgmt.Status.text(status))",
                                  guidance: "check `btmgmt --index \(adapter.dropFirst(3)) info` and `dmesg`")
        }
    }

    /// An adapter that is not powered: blocked by rfkill (then powering it on fails, and
    /// `rfkill unblock` is the advice), or simply off.
    static func poweredOff(_ adapter: String, rfkillRoot: String = "/sys/class/rfkill") -> BLEUnavailable {
        switch rfkillBlock(adapter, root: rfkillRoot) {
        case .hard?:
            return BLEUnavailable("\(adapter) is blocked by a hardware switch (rfkill)",
                                  guidance: "turn the wireless switch or key on, then enable Bluetooth again")
        case .soft?:
            return rfkilled(adapter)
        case nil:
            return BLEUnavailable("\(adapter) is powered off",
                                  guidance: "turn it on with `bluetoothctl power on` or `btmgmt --index \(adapter.dropFirst(3)) power on`, then enable Bluetooth again")
        }
    }

    static func rfkilled(_ adapter: String) -> BLEUnavailable {
        BLEUnavailable("\(adapter) is blocked by rfkill",
                       guidance: "unblock it with `rfkill unblock bluetooth`, then enable Bluetooth again")
    }

    enum RfkillBlock { case soft, hard }

    /// How the kernel's rfkill switch for `adapter` ("hci0") blocks it, if it does:
    /// /sys/class/rfkill/rfkill*/ with `name` "hci0" (the switch the Bluetooth core
    /// registers per adapter) and `soft`/`hard` "1". nil: not blocked, or no switch found.
    static func rfkillBlock(_ adapter: String, root: String) -> RfkillBlock? {
        guard let dir = opendir(root) else { return nil }
        defer { closedir(dir) }
        var block: RfkillBlock?
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.hasPrefix("rfkill") else { continue }
            let path = "\(root)/\(name)"
            guard readLine(path + "/name") == adapter else { continue }
            if readLine(path + "/hard") == "1" { return .hard }
            if readLine(path + "/soft") == "1" { block = .soft }
        }
        return block
    }

    /// The first line of a small sysfs file, without its newline.
    private static func readLine(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self).trimmingSuffix("\n")
    }

    /// A PSM another socket is bound to: the transport cannot start (LINK_FAILED, as every
    /// start failure), and the person can act on it.
    static func psmInUse(_ psm: UInt16, adapter: BLEAddress) -> BLEUnavailable {
        BLEUnavailable("L2CAP PSM 0x\(String(psm, radix: 16)) on \(adapter.text) is in use (another Ya OK node on this adapter?)",
                       guidance: "stop the other program, or choose another PSM (0x0080-0x00FF)")
    }
}

private extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
