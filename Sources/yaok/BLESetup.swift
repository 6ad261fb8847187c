import YaOK

/// Builds and enables the Bluetooth LE transport for `run --ble`. Unlike the LAN's, its
/// failure does not end `run`: where Bluetooth is absent (no kernel support, no adapter,
/// adapter off, no permission) the node carries on with its other transports, the failure
/// is printed (the transport event, "Bluetooth unavailable: …", and a warning), and
/// `yaok transport ble on` tries again later.
enum BLESetup {
    struct Started {
        var enabled = false
        var fields: [(String, JSON)] = []
        var note: String
    }

    static func start(_ node: Node, adapter: String?, out: EventOutput?) throws -> Started {
        var options = BLETransport.Options()
        options.adapter = adapter
        let transport = try BLETransport(options: options)  // a malformed --ble-adapter ends `run`
        try node.addTransport(transport)
        do {
            try node.setTransport(transport.name, enabled: true)
        } catch {
            out?.line(.object([("event", .string("warning")), ("message", .string("\(error)"))])) {
                "warning: \(error); running without it (`yaok transport ble on` tries again)"
            }
            return Started(note: "Bluetooth unavailable")
        }
        // What an observer can learn that the person can change (LE privacy off).
        for advisory in transport.advisories {
            out?.line(.object([("event", .string("warning")), ("message", .string(advisory))])) { "warning: \(advisory)" }
        }
        let name = transport.adapterName ?? "?"
        return Started(enabled: true, fields: [("ble_adapter", .string(name))], note: "Bluetooth LE on \(name)")
    }
}
