import CYaOK
import YaOK

/* ---- forward secrecy ---- */

/// YAOK_FORWARD_SECRECY_* in include/yaok.h: the C numbering of a contact's state. Never renumbered.
private func forwardSecrecyState(_ status: ForwardSecrecyStatus) -> UInt32 {
    guard status.enabled else { return YAOK_FORWARD_SECRECY_OFF }
    if status.active { return YAOK_FORWARD_SECRECY_ON }
    return status.prekeyExposureUntilMs != nil ? YAOK_FORWARD_SECRECY_PREKEY : YAOK_FORWARD_SECRECY_NOT_YET
}

@c @implementation
public func yaok_contact_forward_secrecy(_ node: OpaquePointer?, _ contactID: Int64, _ outState: UnsafeMutablePointer<UInt32>?,
                                         _ outLongTermSeals: UnsafeMutablePointer<UInt64>?,
                                         _ outReceiverKeys: UnsafeMutablePointer<UInt32>?) -> Int32 {
    fillValues({ try YaOKFFI.node(node) }, (outState, "out_state"), (outLongTermSeals, "out_long_term_seals"),
               (outReceiverKeys, "out_receiver_keys")) { n in forwardSecrecyFields(try n.forwardSecrecy(contactID)) }
}

/// yaok_contact_forward_secrecy's out-values: YAOK_FORWARD_SECRECY_*, long-term seals,
/// receiver keys.
private func forwardSecrecyFields(_ status: ForwardSecrecyStatus) -> (UInt32, UInt64, UInt32) {
    (forwardSecrecyState(status), UInt64(clamping: status.longTermSeals), UInt32(clamping: status.receiverKeys))
}

@c @implementation
public func yaok_contact_prekey_exposure(_ node: OpaquePointer?, _ contactID: Int64,
                                         _ outUntilMs: UnsafeMutablePointer<Int64>?) -> Int32 {
    withNode(node) { n in
        let out = try required(outUntilMs, "out_until_ms")
        out.pointee = try n.forwardSecrecy(contactID).prekeyExposureUntilMs ?? 0
    }
}
