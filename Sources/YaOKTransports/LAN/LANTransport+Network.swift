import YaOKSupport
import YaOKLoop
import YaOKNode

/// Whether the LAN transport has a network to be on (docs/ARCHITECTURE.md "Transport
/// state"): running with no usable IPv4 interface, it can neither be found nor reach anyone,
/// and says so as "disconnected: no network" rather than "connected".
///
/// Usable: listening on loopback, or with a static peer on loopback (its peers are on this
/// host), or listening on a specific address that
/// an interface that is up holds; listening on every address (0.0.0.0), any interface that
/// is up with an IPv4 address other than loopback (the discovery interface, when one is
/// named). The interfaces are read at start and at most once a second on the tick, through
/// `interfaces` (getifaddrs(3); tests give their own).
extension LANTransport {
    /// Why there is no network, or nil when there is one (`statics`: the static peers).
    func noNetworkReason(_ subnets: [BeaconSource.Subnet], statics: [StaticPeer]) -> String? {
        let listen = listenEndpoint.address
        if listen >> 24 == 127 || statics.contains(where: { $0.endpoint.address >> 24 == 127 }) { return nil }
        if let interface = options.discovery?.interface, subnets.isEmpty {
            return "No network: \(interface) is down or has no IPv4 address"
        }
        if listen != 0 {
            guard subnets.contains(where: { $0.address == listen }) else {
                return "No network: \(listenEndpoint.host) is not the address of an interface that is up"
            }
            return nil
        }
        return subnets.isEmpty ? "No network: no IPv4 interface is up (other than loopback)" : nil
    }

    /// Reads the interfaces again (at most once a second unless `force`), which also renews
    /// the subnets beacons are checked against: whether there is a network. True if that
    /// changed.
    func refreshNetworkLocked(_ s: inout LANState, force: Bool = false) -> Bool {
        let now = EventLoop.monotonicNanoseconds()
        guard force || now &- s.networkReadAt >= LANTransport.nanoseconds(1) else { return false }
        s.networkReadAt = now
        s.subnetsReadAt = now
        s.subnets = interfaces(options.discovery?.interface)
        let reason = noNetworkReason(s.subnets, statics: s.statics)
        defer { s.noNetwork = reason }
        return reason != s.noNetwork
    }

    /// Connected while running with a network; disconnected (no network) without one.
    public var connection: TransportConnection? { state.withLock { connectionLocked($0) } }

    func connectionLocked(_ s: LANState) -> TransportConnection? {
        guard s.running else { return nil }
        guard let reason = s.noNetwork else { return .connected }
        return TransportConnection(state: .disconnected, reason: .noNetwork, detail: reason)
    }

    /// Tells the node the connection as it is now (it emits an event only on a change), with
    /// a sequence taken under the lock, as the other transports do.
    func publishConnection() {
        let (opener, connection, sequence) = state.withLock { ($0.opener, connectionLocked($0), TransportConnection.nextSequence()) }
        guard let node = opener as? Node, let connection else { return }
        node.reportConnection(name, connection, sequence: sequence)
    }
}
