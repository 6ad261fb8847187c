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
