import CYaOK
import YaOK

/* ---- typed access: contacts ---- */

/// An immutable snapshot of one contact, its strings lent as `const char *`.
final class ContactHandle: Handle {
    let contact: Contact
    let name: LentString
    let userID: LentString
    /// YAOK_FINGERPRINT_HEX, _GROUPED, _SHORT, in that order.
    let fingerprints: [LentString]
    let transport: LentString?

    init(_ contact: Contact) throws {
        self.contact = contact
        name = try LentString(contact.name)
        userID = try LentString(contact.userID)
        fingerprints = try (0..<3).map { try LentString(try formatFingerprint(contact.fingerprint, UInt32($0))) }
        if case .online(let t) = contact.connection { transport = try LentString(t) } else { transport = nil }
    }
}

@c @implementation
public func yaok_contact_add_v2(_ node: OpaquePointer?, _ card: UnsafePointer<CChar>?,
                                _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in try ContactHandle(try n.addContact(card: try cardText(card, "card_text"))) }
}

@c @implementation
public func yaok_contact_get(_ node: OpaquePointer?, _ contactID: Int64, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in try ContactHandle(try n.contact(contactID)) }
}

@c @implementation
public func yaok_contact_ids(_ node: OpaquePointer?, _ outIDs: UnsafeMutablePointer<Int64>?, _ capacity: Int,
                             _ outCount: UnsafeMutablePointer<Int>?) -> Int32 {
    withNode(node) { n in try fillArray(outIDs, "out_ids", capacity, outCount) { try n.contacts().map(\.id) } }
}

/// The caller's array `(out, capacity)` filled with up to `capacity` of the values `make`
/// gives, their total count in `*out_count`: the capacity first, then `out` (required when
/// the capacity is not 0), then `out_count`, then the values.
func fillArray<T>(_ out: UnsafeMutablePointer<T>?, _ name: String, _ capacity: Int, _ outCount: UnsafeMutablePointer<Int>?,
                  _ make: () throws -> [T]) throws {
    // size_t arrives as Int: a capacity above Int.max shows up negative.
    guard capacity >= 0 else { throw YaOKError(.invalidArgument, "capacity is too large") }
    let out = capacity > 0 ? try required(out, name) : nil
    let outCount = try required(outCount, "out_count")
    let values = try make()
    for (i, value) in values.prefix(capacity).enumerated() { out?[i] = value }
    outCount.pointee = values.count
}

@c @implementation
public func yaok_contact_free(_ contact: OpaquePointer?) { Handles.release(contact, as: ContactHandle.self) }

@c @implementation
public func yaok_contact_id(_ c: OpaquePointer?, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    contactValue(c, out, "out_contact_id") { $0.contact.id }
}

@c @implementation
public func yaok_contact_name(_ c: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    contactValue(c, out, "out_name") { UnsafePointer($0.name.pointer) }
}

@c @implementation
public func yaok_contact_user_id(_ c: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    contactValue(c, out, "out_user_id") { UnsafePointer($0.userID.pointer) }
}

@c @implementation
public func yaok_contact_fingerprint(_ c: OpaquePointer?, _ format: UInt32,
                                     _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    contactValue(c, out, "out_fingerprint") { c in try c.fingerprint(format) }
}

extension ContactHandle {
    /// The lent fingerprint in YAOK_FINGERPRINT_* `format`.
    func fingerprint(_ format: UInt32) throws -> UnsafePointer<CChar> {
        guard format < UInt32(fingerprints.count) else { throw YaOKError(.invalidArgument, "Unknown fingerprint format \(format)") }
        return UnsafePointer(fingerprints[Int(format)].pointer)
    }
}

@c @implementation
public func yaok_contact_verified(_ c: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    contactValue(c, out, "out_verified") { $0.contact.verified ? 1 : 0 }
}

@c @implementation
public func yaok_contact_connection(_ c: OpaquePointer?, _ outState: UnsafeMutablePointer<UInt32>?,
                                    _ outTransport: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                    _ outLastSeen: UnsafeMutablePointer<Int64>?) -> Int32 {
    contactValue(c, outState, "out_state") { c in c.connection(outTransport, outLastSeen) }
}

extension ContactHandle {
    /// The connection as YAOK_CONNECTION_*, its transport and last-seen time written to the
    /// optional out-pointers (NULL and 0 where they do not apply).
    func connection(_ outTransport: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                    _ outLastSeen: UnsafeMutablePointer<Int64>?) -> UInt32 {
        outTransport?.pointee = nil
        outLastSeen?.pointee = 0
        switch contact.connection {
        case .neverConnected:
            return YAOK_CONNECTION_NEVER_CONNECTED
        case .lastSeen(let t):
            outLastSeen?.pointee = t
            return YAOK_CONNECTION_LAST_SEEN
        case .online:
            outTransport?.pointee = transport.map { UnsafePointer($0.pointer) }
            return YAOK_CONNECTION_ONLINE
        }
    }
}
