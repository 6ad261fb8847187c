import YaOK

/* ---- messages ---- */

/// Message text crosses as (bytes, length) of UTF-8: refused, never repaired, if invalid.
private func text(_ pointer: UnsafePointer<UInt8>?, _ length: Int) throws -> String {
    guard length <= Envelope.maxBodyLength else { throw YaOKError(.messageTooLarge) }
    guard let s = String(validating: try bytes(pointer, length, "text"), as: UTF8.self) else {
        throw YaOKError(.invalidUTF8, "text is not valid UTF-8")
    }
    return s
}

@_cdecl("yaok_message_store_outgoing")
public func yaok_message_store_outgoing(_ node: OpaquePointer?, _ contactID: Int64,
                                        _ textBytes: UnsafePointer<UInt8>?, _ textLength: Int,
                                        _ messageID: UnsafePointer<UInt8>?,
                                        _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out_json")
        let id = messageID.map { Array(UnsafeBufferPointer(start: $0, count: Envelope.messageIDLength)) }
        try give(try n.storeOutgoing(to: contactID, text: try text(textBytes, textLength), messageID: id).json.serialized, to: out)
    }
}

@_cdecl("yaok_message_store_incoming")
public func yaok_message_store_incoming(_ node: OpaquePointer?, _ contactID: Int64,
                                        _ textBytes: UnsafePointer<UInt8>?, _ textLength: Int,
                                        _ messageID: UnsafePointer<UInt8>?, _ sentAtMs: Int64,
                                        _ outDuplicate: UnsafeMutablePointer<UInt32>?,
                                        _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out_json")
        let outDuplicate = try required(outDuplicate, "out_duplicate")
        let result = try n.storeIncoming(from: contactID, text: try text(textBytes, textLength),
                                         messageID: try fixedBytes(messageID, Envelope.messageIDLength, "message_id"),
                                         sentAt: sentAtMs)
        try give(result.message.json.serialized, to: out)
        outDuplicate.pointee = result.duplicate ? 1 : 0
    }
}

@_cdecl("yaok_message_set_status")
public func yaok_message_set_status(_ node: OpaquePointer?, _ messageID: UnsafePointer<UInt8>?, _ status: UInt32) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        guard let s = MessageStatus(rawValue: Int(status)) else { throw YaOKError(.invalidArgument, "Unknown status \(status)") }
        try n.updateMessageStatus(try fixedBytes(messageID, Envelope.messageIDLength, "message_id"), to: s)
    }
}

@_cdecl("yaok_message_history")
public func yaok_message_history(_ node: OpaquePointer?, _ conversationID: Int64, _ cursor: UnsafePointer<CChar>?,
                                 _ limit: UInt32, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out_json")
        let page = try n.history(conversationID, before: try cursor.map { try string($0, "cursor") }, limit: Int(limit))
        try give(page.json.serialized, to: out)
    }
}

@_cdecl("yaok_message_mark_read")
public func yaok_message_mark_read(_ node: OpaquePointer?, _ conversationID: Int64,
                                   _ outCount: UnsafeMutablePointer<UInt64>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(outCount, "out_count")
        out.pointee = UInt64(try n.markRead(conversationID))
    }
}
