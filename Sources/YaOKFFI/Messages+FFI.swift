import CYaOK
import YaOK

/* ---- messages ---- */

/// Message text crosses as (bytes, length) of UTF-8: refused, never repaired, if invalid.
func messageText(_ pointer: UnsafePointer<UInt8>?, _ length: Int) throws -> String {
    guard length <= Envelope.maxBodyLength else { throw YaOKError(.messageTooLarge) }
    guard let s = String(validating: try bytes(pointer, length, "text"), as: UTF8.self) else {
        throw YaOKError(.invalidUTF8, "text is not valid UTF-8")
    }
    return s
}

/// A borrowed YAOK_MESSAGE_ID_BYTES message ID.
func messageID(_ pointer: UnsafePointer<UInt8>?) throws -> MessageID {
    try MessageID(bytes: try fixedBytes(pointer, Envelope.messageIDLength, "message_id"))
}

@c @implementation
public func yaok_message_send(_ node: OpaquePointer?, _ contactID: Int64, _ textBytes: UnsafePointer<UInt8>?,
                              _ textLength: Int, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try n.send(to: contactID, text: try messageText(textBytes, textLength)).json }
}

@c @implementation
public func yaok_message_retry(_ node: OpaquePointer?, _ id: UnsafePointer<UInt8>?,
                               _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try n.retry(try messageID(id)).json }
}

@c @implementation
public func yaok_message_get(_ node: OpaquePointer?, _ id: UnsafePointer<UInt8>?,
                             _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try n.outgoingMessage(try messageID(id)).json }
}

@c @implementation
public func yaok_outbox(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in JSON.array(try n.outbox().map(\.json)) }
}

@c @implementation
public func yaok_message_history(_ node: OpaquePointer?, _ conversationID: Int64, _ cursor: UnsafePointer<CChar>?,
                                 _ limit: UInt32, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try historyPage(n, conversationID, cursor, limit).json }
}

@c @implementation
public func yaok_message_mark_read(_ node: OpaquePointer?, _ conversationID: Int64,
                                   _ outCount: UnsafeMutablePointer<UInt64>?) -> Int32 {
    nodeValue(node, outCount, "out_count") { n in UInt64(try n.markRead(conversationID)) }
}
