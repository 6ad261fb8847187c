import CYaOK
import YaOK

/* ---- transports and diagnostics ---- */

@c @implementation
public func yaok_transport_set_enabled(_ node: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ enabled: Int32) -> Int32 {
    withNode(node) { n in try n.setTransport(try string(name, "name"), enabled: enabled != 0) }
}

@c @implementation
public func yaok_node_diagnostics(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try n.diagnostics() }
}

/// YAOK_LAN_NO_DISCOVERY
private let lanNoDiscovery = YAOK_LAN_NO_DISCOVERY

@c @implementation
public func yaok_transport_lan_add(_ node: OpaquePointer?, _ listenAddress: UnsafePointer<CChar>?, _ port: UInt16,
                                   _ flags: UInt32, _ peers: UnsafePointer<UnsafePointer<CChar>?>?,
                                   _ peersCount: Int) -> Int32 {
    withNode(node) { n in try n.addTransport(try LANTransport(options: try lanOptions(listenAddress, port, flags, peers, peersCount))) }
}

/// yaok_transport_lan_add's arguments, checked in order (flags, peers_count, the listen
/// address, then each peer), as the LAN transport's options.
private func lanOptions(_ listenAddress: UnsafePointer<CChar>?, _ port: UInt16, _ flags: UInt32,
                        _ peers: UnsafePointer<UnsafePointer<CChar>?>?, _ peersCount: Int) throws -> LANTransport.Options {
    guard flags & ~lanNoDiscovery == 0 else { throw YaOKError(.invalidArgument, "Unknown flags \(flags)") }
    guard (0...64).contains(peersCount) else { throw YaOKError(.invalidArgument, "peers_count must be 0 to 64") }
    var options = LANTransport.Options()
    if listenAddress != nil { options.listenAddress = try string(listenAddress, "listen_address") }
    options.listenPort = port
    if flags & lanNoDiscovery != 0 { options.discovery = nil }
    if peersCount > 0 {
        let list = try required(peers, "peers")
        options.staticPeers = try (0..<peersCount).map { try string(list[$0], "peers[\($0)]") }
    }
    return options
}

@c @implementation
public func yaok_transport_ble_add(_ node: OpaquePointer?, _ adapter: UnsafePointer<CChar>?) -> Int32 {
    withNode(node) { n in try n.addTransport(try BLETransport(options: BLETransport.Options(adapter: try adapter.map { try string($0, "adapter") }))) }
}

@c @implementation
public func yaok_transport_relay_add(_ node: OpaquePointer?, _ address: UnsafePointer<CChar>?, _ pinHex: UnsafePointer<CChar>?,
                                     _ caFile: UnsafePointer<CChar>?) -> Int32 {
    withNode(node) { n in try n.addTransport(try relayTransport(address, pinHex, caFile)) }
}

/// yaok_transport_relay_add's arguments, checked in order (pin, CA file, address), as a
/// relay transport.
private func relayTransport(_ address: UnsafePointer<CChar>?, _ pinHex: UnsafePointer<CChar>?,
                            _ caFile: UnsafePointer<CChar>?) throws -> RelayTransport {
    let pin = try pinHex.map { pointer -> [UInt8] in
        guard let bytes = Hex.decode(try string(pointer, "pin_hex")), bytes.count == 32 else {
            throw YaOKError(.invalidArgument, "pin_hex must be 64 hex digits (the relay's SHA-256 pin)")
        }
        return bytes
    }
    let ca = try caFile.map { try string($0, "ca_file") }
    return try RelayTransport(address: RelayAddress(try string(address, "address")), pin: pin, caFile: ca)
}

extension BLETransport.Options {
    /// The standard options on `adapter` (nil: the first adapter).
    init(adapter: String?) {
        self.init()
        self.adapter = adapter
    }
}
