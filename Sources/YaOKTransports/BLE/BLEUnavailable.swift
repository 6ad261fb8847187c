import Glibc
import YaOKSupport

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
                                  guidance: "run as root or give the program CAP_NET_ADMIN, e.g. `setcap cap_net_admin,cap_net_raw+ep yaok`")
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
                                  guidance: "run as root or give the program CAP_NET_ADMIN, e.g. `setcap cap_net_admin,cap_net_raw+ep yaok`")
        case .notPowered:
            return poweredOff(adapter)
        case .rfkilled:
            return BLEUnavailable("\(adapter) is blocked by rfkill", guidance: "unblock it with `rfkill unblock bluetooth`")
        case .invalidIndex:
            return BLEUnavailable("\(adapter) has gone", guidance: "plug the adapter in again, or choose another with --ble-adapter")
        default:
            return BLEUnavailable("\(adapter): \(what) failed: \(Mgmt.Status.text(status))",
                                  guidance: "check `btmgmt --index \(adapter.dropFirst(3)) info` and `dmesg`")
        }
    }

    static func poweredOff(_ adapter: String) -> BLEUnavailable {
        BLEUnavailable("\(adapter) is powered off",
                       guidance: "turn it on with `bluetoothctl power on` or `btmgmt --index \(adapter.dropFirst(3)) power on`, then enable Bluetooth again")
    }
}
