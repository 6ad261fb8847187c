import YaOKSupport

/// What an observer can learn from our advertising (PROTOCOL.md §9.3), said to the person.
/// The token changes every few minutes, but the advertising address is the adapter's own,
/// fixed one unless LE privacy is on — and a fixed address links all the tokens together.
/// The transport does not turn privacy on itself: the kernel accepts it only while the
/// adapter is off, and the adapter may be shared with the rest of the system.
extension BLETransport {
    /// Warnings for people, each with what to do about it (empty: none). Also in
    /// `diagnostics()` ("advisories"); `yaok run --ble` prints them as warnings.
    public var advisories: [String] { state.withLock { advisoriesLocked($0) } }

    func advisoriesLocked(_ s: BLEState) -> [String] {
        guard s.running, let adapter = s.adapter, !adapter.privacy else { return [] }
        return [BLETransport.fixedAddressAdvisory(adapter)]
    }

    static func fixedAddressAdvisory(_ adapter: BLEAdapter) -> String {
        let i = adapter.index
        return "Bluetooth: advertising with \(adapter.name)'s fixed address; an observer can follow this device "
            + "across token changes — enable LE privacy (`btmgmt --index \(i) power off`, `btmgmt --index \(i) privacy on`, "
            + "`btmgmt --index \(i) power on`; with bluetoothd, `Privacy = device` in /etc/bluetooth/main.conf)"
    }
}
