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
    withNode(node) { n in
        let outState = try required(outState, "out_state")
        let outSeals = try required(outLongTermSeals, "out_long_term_seals")
        let outKeys = try required(outReceiverKeys, "out_receiver_keys")
        let status = try n.forwardSecrecy(contactID)
        outState.pointee = forwardSecrecyState(status)
        outSeals.pointee = UInt64(clamping: status.longTermSeals)
        outKeys.pointee = UInt32(clamping: status.receiverKeys)
    }
}

@c @implementation
public func yaok_contact_prekey_exposure(_ node: OpaquePointer?, _ contactID: Int64,
                                         _ outUntilMs: UnsafeMutablePointer<Int64>?) -> Int32 {
    withNode(node) { n in
        let out = try required(outUntilMs, "out_until_ms")
        out.pointee = try n.forwardSecrecy(contactID).prekeyExposureUntilMs ?? 0
    }
}
