import CYaOK
import YaOK

/* ---- typed access: messages ---- */

/// An immutable snapshot of one message, with its text lent as `const char *`.
final class MessageHandle: Handle {
    let message: Message
    let text: LentString
    init(_ message: Message) throws {
        self.message = message
        self.text = try LentString(message.text)
    }
}

private func message(_ pointer: OpaquePointer?) throws -> Message {
    try Handles.borrow(pointer, as: MessageHandle.self, "message").message
}

@c @implementation
public func yaok_message_send_v2(_ node: OpaquePointer?, _ contactID: Int64, _ textBytes: UnsafePointer<UInt8>?,
                                 _ textLength: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out")
        let handle = try MessageHandle(try n.send(to: contactID, text: try messageText(textBytes, textLength)))
        out.pointee = Handles.make(handle)
    }
}

@c @implementation
public func yaok_message_lookup(_ node: OpaquePointer?, _ contactID: Int64, _ id: UnsafePointer<UInt8>?,
                                _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out")
        out.pointee = Handles.make(try MessageHandle(try n.message(contactID, try messageID(id))))
    }
}

@c @implementation
public func yaok_message_free(_ message: OpaquePointer?) { Handles.release(message, as: MessageHandle.self) }

@c @implementation
public func yaok_message_id(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UInt8>?) -> Int32 {
    boundary {
        let m = try message(m)
        copyMessageID(m.messageID, to: try required(out, "out_message_id"))
    }
}

@c @implementation
public func yaok_message_contact_id(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    boundary {
        let m = try message(m)
        try required(out, "out_contact_id").pointee = m.conversationID
    }
}

@c @implementation
public func yaok_message_direction(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UInt32>?) -> Int32 {
    boundary {
        let m = try message(m)
        try required(out, "out_direction").pointee = m.direction.abiCode
    }
}

@c @implementation
public func yaok_message_status(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UInt32>?) -> Int32 {
    boundary {
        let m = try message(m)
        try required(out, "out_status").pointee = m.status.abiCode
    }
}

@c @implementation
public func yaok_message_text(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                              _ outLength: UnsafeMutablePointer<Int>?) -> Int32 {
    boundary {
        let handle = try Handles.borrow(m, as: MessageHandle.self, "message")
        let out = try required(out, "out_text")
        let outLength = try required(outLength, "out_len")
        handle.text.lend(to: out)
        outLength.pointee = handle.text.count
    }
}

@c @implementation
public func yaok_message_repaired(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    boundary {
        let m = try message(m)
        try required(out, "out_repaired").pointee = m.repaired ? 1 : 0
    }
}

@c @implementation
public func yaok_message_unread(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    boundary {
        let m = try message(m)
        try required(out, "out_unread").pointee = m.unread ? 1 : 0
    }
}

@c @implementation
public func yaok_message_time(_ m: OpaquePointer?, _ which: UInt32, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    boundary {
        let m = try message(m)
        let out = try required(out, "out_ms")
        let time: Int64?
        switch which {
        case YAOK_TIME_SENDER: time = m.senderTimestamp
        case YAOK_TIME_CREATED: time = m.createdAt
        case YAOK_TIME_SENT: time = m.sentAt
        case YAOK_TIME_RECEIVED: time = m.receivedAt
        default: throw YaOKError(.invalidArgument, "Unknown message time \(which)")
        }
        guard let time else {
            throw absent(which == YAOK_TIME_SENT ? "sent time (not sent yet, or incoming)" : "received time (outgoing)", "this message")
        }
        out.pointee = time
    }
}
