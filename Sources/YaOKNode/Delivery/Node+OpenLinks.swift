import YaOKSupport

/// One open link as an app shows it (the typed form of diagnostics' "links", docs/ABI.md).
public struct OpenLink: Sendable, Equatable {
    public let id: UInt64
    public let transport: String
    /// The anonymous handshake completed (docs/PROTOCOL.md §5.8).
    public let authenticated: Bool
    /// What recognition (§5.9) settled: true a contact, false a stranger, nil not yet.
    public let peerIsContact: Bool?
    /// The contact at the other end; nil for a stranger, before recognition, or while the
    /// node is locked and has not matched the peer yet.
    public let contactID: Int64?
    public let openedAt: Int64
    public let lastReceived: Int64

    /// "contact", "stranger" or "unknown": diagnostics' `peer`.
    public var peerName: String { peerIsContact.map { $0 ? "contact" : "stranger" } ?? "unknown" }
}

extension Node {
    /// The links open now, oldest first (a link whose handshake is still running included).
    /// Works while locked.
    public func openLinks() -> [OpenLink] {
        (try? withStore { _, s in
            s.delivery.links.values.sorted { $0.link.id < $1.link.id }.map { l in
                OpenLink(id: l.link.id, transport: l.link.transport, authenticated: l.isOpen,
                         peerIsContact: l.isOpen ? l.link.peerIsContact : nil, contactID: l.contactID,
                         openedAt: l.openedAt, lastReceived: l.lastReceived)
            }
        }) ?? []
    }
}
