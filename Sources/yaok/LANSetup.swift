import YaOK

/// Builds the LAN transport from `run`'s options.
enum LANSetup {
    static func transport(port: Int?, peers: [String], listen: String?, discovery: Bool) throws -> LANTransport {
        var options = LANTransport.Options()
        if let listen { options.listenAddress = listen }
        if let port { options.listenPort = UInt16(port) }  // validated 0…65535 by `run`
        options.staticPeers = peers
        if !discovery { options.discovery = nil }
        return try LANTransport(options: options)
    }
}
