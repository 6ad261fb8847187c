import YaOKSupport

/// Per-relay mailbox IDs (docs/PROTOCOL.md §8.2) keep relays that do not coordinate from
/// matching a node's mailboxes across them. Relays that do coordinate can state the same
/// identifier, and the node then has the same mailboxes at both: so the node tells the app
/// when two relays it was configured with, at different addresses, state one identifier
/// (§8.4). Innocent causes exist (one relay behind two addresses, a cluster over one
/// database, a relay restored from a backup); the notice names the addresses and says so.
struct StatedRelayIdentifiers {
    /// Per route ("host:port"): the identifier it stated last, and when.
    var byRoute: [String: (identifier: [UInt8], ms: Int64)] = [:]
    /// Routes the app was told share an identifier, in this run: a route in it does not
    /// bring the notice again when its relay logs in again (every hour).
    var noticed: Set<String> = []

    /// Routes remembered (a new one pushes out the one heard from longest ago).
    static let maxRoutes = 256

    /// Records that `route` stated `identifier` at `t`; returns the other routes stating it.
    mutating func stated(_ identifier: [UInt8], at route: String, now t: Int64) -> [String] {
        if byRoute[route] == nil, byRoute.count >= Self.maxRoutes,
           let oldest = byRoute.min(by: { $0.value.ms < $1.value.ms })?.key {
            byRoute[oldest] = nil
            noticed.remove(oldest)
        }
        byRoute[route] = (identifier, t)
        return sharing(route)
    }

    /// The other routes whose last stated identifier is `route`'s, sorted.
    func sharing(_ route: String) -> [String] {
        guard let mine = byRoute[route]?.identifier, !mine.isEmpty else { return [] }
        return byRoute.filter { $0.key != route && $0.value.identifier == mine }.map(\.key).sorted()
    }
}

extension DeliveryEngine {
    /// A carrier opened: remember what its relay stated and, when this route shares its
    /// identifier with another and the app was not told about this route yet in this run,
    /// tell it (once for a pair, not once per address of it).
    mutating func noteStatedIdentifier(_ carrier: Carrier) {
        let others = statedIdentifiers.stated(carrier.relay, at: carrier.route, now: now)
        guard !others.isEmpty, !statedIdentifiers.noticed.contains(carrier.route) else { return }
        statedIdentifiers.noticed.formUnion(others + [carrier.route])
        effects.events.append(.transportNotice(TransportNotice(
            transport: carrier.transport,
            message: "The relays at \(carrier.route) and \(others.joined(separator: ", ")) state the same relay identifier, "
                + "so your mailboxes are the same at both: they are one relay (behind two addresses, or restored from a backup), "
                + "or relays that work together and can match your mailboxes across them.")))
    }
}

extension Node {
    /// For a relay's diagnostics: the other configured relays (routes) that stated the same
    /// identifier as the one at `route` did last. Empty: none.
    public func routesSharingRelayIdentifier(route: String) -> [String] {
        state.withLock { s in s.delivery.statedIdentifiers.sharing(route) }
    }
}
