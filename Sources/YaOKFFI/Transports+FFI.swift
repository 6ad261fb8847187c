import YaOK

/* ---- transports and diagnostics ---- */

@_cdecl("yaok_transport_set_enabled")
public func yaok_transport_set_enabled(_ node: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ enabled: Int32) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        try n.setTransport(try string(name, "name"), enabled: enabled != 0)
    }
}

@_cdecl("yaok_node_diagnostics")
public func yaok_node_diagnostics(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out_json")
        try give(try n.diagnostics().serialized, to: out)
    }
}

/// YAOK_LAN_NO_DISCOVERY
private let lanNoDiscovery: UInt32 = 1

@_cdecl("yaok_transport_lan_add")
public func yaok_transport_lan_add(_ node: OpaquePointer?, _ listenAddress: UnsafePointer<CChar>?, _ port: UInt16,
                                   _ flags: UInt32, _ peers: UnsafePointer<UnsafePointer<CChar>?>?,
                                   _ peersCount: Int) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
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
        try n.addTransport(try LANTransport(options: options))
    }
}
