import ArgumentParser
import YaOK

/// The transport flags of `yaok run`, which `yaok chat` takes too (for when it opens the
/// node itself): the LAN, a relay and Bluetooth LE.
struct TransportOptions: ParsableArguments {
    @Flag(help: "Enable the local network transport (WiFi/Ethernet).")
    var lan = false

    @Option(help: "The TCP/UDP port the LAN transport listens on.")
    var lanPort: Int?

    @Option(help: "A peer to connect to directly, HOST:PORT (repeatable); for networks without discovery.")
    var lanPeer: [String] = []

    @Option(help: "The IPv4 address the LAN transport listens on (default: 0.0.0.0, every interface).")
    var lanListen: String?

    @Flag(inversion: .prefixedNo, help: "Find peers on the LAN by multicast beacons.")
    var lanDiscovery = true

    @Option(help: "A relay to carry messages to contacts who are not nearby, HOST:PORT (TLS 1.3).")
    var relay: String?

    @Option(help: "The relay's pin: the 64 hex digits `yaok-relay` prints as `pin:`.")
    var relayPin: String?

    @Option(help: "PEM CA certificates to check the relay's certificate against (instead of a pin).")
    var relayCa: String?

    @Flag(help: "Enable the Bluetooth LE transport (L2CAP channels; LE advertising and scanning).")
    var ble = false

    @Option(help: "The Bluetooth adapter for --ble, e.g. hci1 (default: the first powered LE adapter).")
    var bleAdapter: String?

    func validate() throws {
        if !ble, bleAdapter != nil { throw ValidationError("--ble-adapter needs --ble") }
        if relay == nil, relayPin != nil || relayCa != nil { throw ValidationError("--relay-pin and --relay-ca need --relay") }
        if relay != nil, (relayPin == nil) == (relayCa == nil) {
            throw ValidationError("--relay needs --relay-pin HEX or --relay-ca FILE (exactly one): the relay's certificate is always checked")
        }
        if !lan, lanPort != nil || !lanPeer.isEmpty || lanListen != nil || !lanDiscovery {
            throw ValidationError("--lan-port, --lan-peer, --lan-listen and --no-lan-discovery need --lan")
        }
        if let lanPort, !(0...65535).contains(lanPort) { throw ValidationError("--lan-port must be 0 to 65535") }
    }

    /// Whether any transport was asked for.
    var any: Bool { lan || relay != nil || ble }

    /// What `start` reports: the transports' names, fields for `run`'s "started" line, and
    /// a few words each for people ("LAN on 0.0.0.0:4040", "relay host:443").
    struct Started {
        var enabled: [String] = []
        var fields: [(String, JSON)] = []
        var notes: [String] = []
    }

    /// Adds the chosen transports to `node` and enables them. A failure to start (a port in
    /// use) throws; Bluetooth that is unavailable does not (`BLESetup`: a warning on `out`).
    func start(on node: Node, out: EventOutput? = nil) throws -> Started {
        var started = Started()
        if lan {
            let transport = try LANSetup.transport(port: lanPort, peers: lanPeer, listen: lanListen, discovery: lanDiscovery)
            try node.addTransport(transport)
            try node.setTransport(transport.name, enabled: true)
            started.enabled.append(transport.name)
            if let port = transport.listeningPort {
                started.fields.append(("lan_port", .int(Int64(port))))
                started.notes.append("LAN on \(lanListen ?? "0.0.0.0"):\(port)\(lanDiscovery ? ", discovery on" : "")")
            }
        }
        if let relay {
            let transport = try RelaySetup.transport(address: relay, pin: relayPin, caFile: relayCa)
            try node.addTransport(transport)
            try node.setTransport(transport.name, enabled: true)
            started.enabled.append(transport.name)
            started.fields.append(("relay", .string(transport.address.description)))
            started.notes.append("relay \(transport.address)")
        }
        if ble {
            let b = try BLESetup.start(node, adapter: bleAdapter, out: out)
            if b.enabled { started.enabled.append("ble") }
            started.fields += b.fields
            started.notes.append(b.note)
        }
        return started
    }
}
