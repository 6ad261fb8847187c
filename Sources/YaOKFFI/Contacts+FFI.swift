import CYaOK
import YaOK
import YaOKSupport

/* ---- contacts ---- */

/// YAOK_CONTACT_DELETE_MESSAGES
let contactDeleteMessages = YAOK_CONTACT_DELETE_MESSAGES

@c @implementation
public func yaok_contact_preview(_ node: OpaquePointer?, _ card: UnsafePointer<CChar>?,
                                 _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try n.previewContact(card: try cardText(card, "card_text")).json }
}

@c @implementation
public func yaok_contact_add(_ node: OpaquePointer?, _ card: UnsafePointer<CChar>?,
                             _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try n.addContact(card: try cardText(card, "card_text")).json }
}

@c @implementation
public func yaok_contact_list(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in JSON.array(try n.contacts().map(\.json)) }
}

@c @implementation
public func yaok_contact_show(_ node: OpaquePointer?, _ contactID: Int64,
                              _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try n.contact(contactID).json }
}

@c @implementation
public func yaok_contact_find(_ node: OpaquePointer?, _ query: UnsafePointer<CChar>?,
                              _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try n.findContact(try string(query, "query")).json }
}

@c @implementation
public func yaok_contact_verify(_ node: OpaquePointer?, _ contactID: Int64) -> Int32 {
    boundary { try YaOKFFI.node(node).verifyContact(contactID) }
}

@c @implementation
public func yaok_contact_rename(_ node: OpaquePointer?, _ contactID: Int64, _ name: UnsafePointer<CChar>?) -> Int32 {
    withNode(node) { n in try n.renameContact(contactID, to: try nameText(name, "name")) }
}

@c @implementation
public func yaok_contact_delete(_ node: OpaquePointer?, _ contactID: Int64, _ flags: UInt32) -> Int32 {
    withNode(node) { n in try n.deleteContact(contactID, deleteMessages: try deletesMessages(flags)) }
}

/// YAOK_CONTACT_DELETE_* flags: whether the messages go too.
private func deletesMessages(_ flags: UInt32) throws -> Bool {
    guard flags & ~contactDeleteMessages == 0 else { throw YaOKError(.invalidArgument, "Unknown flags \(flags)") }
    return flags & contactDeleteMessages != 0
}

@c @implementation
public func yaok_contact_keys(_ node: OpaquePointer?, _ contactID: Int64,
                              _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try contactKeys(n, contactID) }
}

/// yaok_contact_keys' JSON: the contact's name, public keys and card.
private func contactKeys(_ n: Node, _ contactID: Int64) throws -> JSON {
    let contact = try n.contact(contactID)
    let keys = contact.publicIdentity
    return JSON.object([("name", .string(contact.name)), ("encryption_key", .string(Hex.encode(keys.encryptionKey))),
                        ("signing_key", .string(Hex.encode(keys.signingKey))),
                        ("card", .string(try n.contactCard(contactID)))])
}
