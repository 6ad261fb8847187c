import CYaOK
import YaOK

/* ---- typed access: open links ---- */

final class LinkListHandle: Handle, SnapshotList {
    /// Each link with its transport name, lent through yaok_link_info.transport.
    let entries: [(link: OpenLink, transport: LentString)]
    static let entryName = "link"
    init(_ links: [OpenLink]) throws {
        entries = try links.map { ($0, try LentString($0.transport)) }
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
    listCount(l, LinkListHandle.self, "links", out)
}

@c @implementation
public func yaok_link_list_get(_ l: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<yaok_link_info>?) -> Int32 {
    sizedEntry(l, LinkListHandle.self, "links", index, out, minimum: linkInfoMinimumSize, "yaok_link_info") { yaok_link_info($0.link, $0.transport) }
}

extension yaok_link_info {
    /// One open link in the header's struct (`struct_size` is set when written).
    init(_ link: OpenLink, _ transport: LentString) {
        self.init()
        authenticated = link.authenticated ? 1 : 0
        link_id = link.id
        self.transport = UnsafePointer(transport.pointer)
        peer = linkPeerCode(authenticated: link.authenticated, isContact: link.peerIsContact)
        has_contact = link.contactID != nil ? 1 : 0
        contact_id = link.contactID ?? 0
        opened_ms = link.openedAt
        last_received_ms = link.lastReceived
    }
}
