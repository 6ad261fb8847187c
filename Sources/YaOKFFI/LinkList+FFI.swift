import CYaOK
import YaOK

/* ---- typed access: open links ---- */

final class LinkListHandle: Handle {
    let links: [OpenLink]
    /// Each link's transport name, lent through yaok_link_info.transport.
    let transports: [LentString]
    init(_ links: [OpenLink]) throws {
        self.links = links
        transports = try links.map { try LentString($0.transport) }
    }
}

/// `yaok_link_info` up to `link_id`.
private let linkInfoMinimumSize = MemoryLayout<yaok_link_info>.offset(of: \.link_id).map { $0 + 8 } ?? MemoryLayout<yaok_link_info>.size

@c @implementation
public func yaok_link_list_new(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in try LinkListHandle(n.openLinks()) }
}

@c @implementation
public func yaok_link_list_free(_ l: OpaquePointer?) { Handles.release(l, as: LinkListHandle.self) }

@c @implementation
public func yaok_link_list_count(_ l: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> Int32 {
    fillValue({ try Handles.borrow(l, as: LinkListHandle.self, "links") }, out, "out_count") { l in l.links.count }
}

@c @implementation
public func yaok_link_list_get(_ l: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<yaok_link_info>?) -> Int32 {
    sizedEntry(l, LinkListHandle.self, "links", out, minimum: linkInfoMinimumSize,
               "yaok_link_info") { l, size in
        let link = try element(l.links, index, "link")
        var c = yaok_link_info()
        c.struct_size = size
        c.authenticated = link.authenticated ? 1 : 0
        c.link_id = link.id
        c.transport = UnsafePointer(l.transports[index].pointer)
        c.peer = linkPeerCode(authenticated: link.authenticated, isContact: link.peerIsContact)
        c.has_contact = link.contactID != nil ? 1 : 0
        c.contact_id = link.contactID ?? 0
        c.opened_ms = link.openedAt
        c.last_received_ms = link.lastReceived
        return c
    }
}
