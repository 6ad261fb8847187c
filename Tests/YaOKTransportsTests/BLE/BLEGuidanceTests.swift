import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKTransports

/// What a person is told when Bluetooth cannot start: advice that works.
@Suite struct BLEGuidanceTests {
    /// An rfkill-blocked adapter reads as powered off in mgmt, and `bluetoothctl power on`
    /// then fails: the advice is `rfkill unblock`.
    @Test func rfkillIsToldFromPoweredOff() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("rfkill-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        func write(_ n: Int, name: String, soft: String, hard: String) throws {
            let dir = root.appendingPathComponent("rfkill\(n)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for (file, value) in [("name", name), ("type", "bluetooth"), ("soft", soft), ("hard", hard)] {
                try (value + "\n").write(to: dir.appendingPathComponent(file), atomically: true, encoding: .utf8)
            }
        }
        try write(0, name: "phy0", soft: "1", hard: "0")  // the Wi-Fi's: not ours
        try write(1, name: "hci0", soft: "0", hard: "0")
        #expect(BLEUnavailable.poweredOff("hci0", rfkillRoot: root.path).message.contains("bluetoothctl power on"))
        try write(1, name: "hci0", soft: "1", hard: "0")
        let soft = BLEUnavailable.poweredOff("hci0", rfkillRoot: root.path).message
        #expect(soft.contains("blocked by rfkill") && soft.contains("`rfkill unblock bluetooth`") && !soft.contains("power on"))
        try write(1, name: "hci0", soft: "0", hard: "1")
        #expect(BLEUnavailable.poweredOff("hci0", rfkillRoot: root.path).message.contains("hardware switch"))
        #expect(BLEUnavailable.poweredOff("hci0", rfkillRoot: root.path + "/none").message.contains("is powered off"))
    }

    /// A PSM in use is a start failure like the others (LINK_FAILED at the C API), with
    /// advice.
    @Test func aPSMInUseIsLinkFailed() {
        let failure = L2CAPSocket.bindFailure(EADDRINUSE, psm: 0x81, adapter: bleAddress(1))
        #expect(failure.error.code == .linkFailed)
        #expect(failure.message.contains("PSM 0x81") && failure.message.contains("in use"))
    }

    /// mgmt needs CAP_NET_ADMIN, L2CAP LE channels on a dynamic PSM nothing: no CAP_NET_RAW
    /// in the advice.
    @Test func permissionAdviceNamesOnlyWhatIsNeeded() {
        let advice = BLEUnavailable.from(errno: EPERM, doing: "binding").message
        #expect(advice.contains("setcap cap_net_admin+ep") && !advice.contains("cap_net_raw"))
    }
}
