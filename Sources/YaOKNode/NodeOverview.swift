import YaOKSupport
import YaOKStore

/// What an app's status line shows, in one read: the lock state (including whether setup
/// has ever run: no unlock attempt needed to find a first run), the transports, links,
/// contacts online and messages waiting. Readable while locked: then the contact and
/// outbox figures are unknown (`unlocked` false, and they read 0).
public struct NodeOverview: Sendable, Equatable {
    public let status: NodeStatus
    public let transports: [TransportState]
    public let openLinks: Int
    /// Packets received while locked, waiting for the next unlock.
    public let heldPackets: Int
    /// Whether the contact and outbox figures below were read (the node is unlocked).
    public let unlocked: Bool
    public let contacts: Int
    public let contactsOnline: Int
    /// Outgoing messages still on their way (pending or failed: the outbox).
    public let messagesWaiting: Int
}

extension Node {
    /// The overview; does not count as activity for auto-lock (a status line refreshes
    /// itself).
    public func overview() throws -> NodeOverview {
        try withoutActivity {
            let status = try self.status()
            let held = try withStore { store, _ in try store.heldCount() }
            let contacts = status.locked ? nil : try? self.contacts()
            let outbox = status.locked ? nil : try? self.outbox()
            let known = contacts != nil && outbox != nil
            return NodeOverview(status: status, transports: transports(), openLinks: openLinks().count,
                                heldPackets: held, unlocked: known,
                                contacts: known ? contacts?.count ?? 0 : 0,
                                contactsOnline: known ? contacts?.filter { if case .online = $0.connection { return true } else { return false } }.count ?? 0 : 0,
                                messagesWaiting: known ? outbox?.count ?? 0 : 0)
        }
    }
}
