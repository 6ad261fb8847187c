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

func messageHandle(_ pointer: OpaquePointer?) throws -> MessageHandle {
    try Handles.borrow(pointer, as: MessageHandle.self, "message")
}

@c @implementation
public func yaok_message_send_v2(_ node: OpaquePointer?, _ contactID: Int64, _ textBytes: UnsafePointer<UInt8>?,
                                 _ textLength: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in try MessageHandle(try n.send(to: contactID, text: try messageText(textBytes, textLength))) }
}

@c @implementation
public func yaok_message_lookup(_ node: OpaquePointer?, _ contactID: Int64, _ id: UnsafePointer<UInt8>?,
                                _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in try MessageHandle(try n.message(contactID, try messageID(id))) }
}

@c @implementation
public func yaok_message_free(_ message: OpaquePointer?) { Handles.release(message, as: MessageHandle.self) }

@c @implementation
public func yaok_message_id(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UInt8>?) -> Int32 {
    fill({ try messageHandle(m) }, out, "out_message_id") { m, out in copyMessageID(m.message.messageID, to: out) }
}

@c @implementation
public func yaok_message_contact_id(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    messageValue(m, out, "out_contact_id") { $0.message.conversationID }
}

@c @implementation
public func yaok_message_direction(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UInt32>?) -> Int32 {
    messageValue(m, out, "out_direction") { $0.message.direction.abiCode }
}

@c @implementation
public func yaok_message_status(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UInt32>?) -> Int32 {
    messageValue(m, out, "out_status") { $0.message.status.abiCode }
}

@c @implementation
public func yaok_message_text(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                              _ outLength: UnsafeMutablePointer<Int>?) -> Int32 {
    fillValues({ try messageHandle(m) }, (out, "out_text"), (outLength, "out_len")) { m in (UnsafePointer(m.text.pointer), m.text.count) }
}

@c @implementation
public func yaok_message_repaired(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    messageValue(m, out, "out_repaired") { $0.message.repaired ? 1 : 0 }
}

@c @implementation
public func yaok_message_unread(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    messageValue(m, out, "out_unread") { $0.message.unread ? 1 : 0 }
}

@c @implementation
public func yaok_message_time(_ m: OpaquePointer?, _ which: UInt32, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    messageValue(m, out, "out_ms") { try $0.message.time(which) }
}

extension Message {
    /// The time YAOK_TIME_* `which` (notFound where the message has none).
    func time(_ which: UInt32) throws -> Int64 {
        let time: Int64?
        switch which {
        case YAOK_TIME_SENDER: time = senderTimestamp
        case YAOK_TIME_CREATED: time = createdAt
        case YAOK_TIME_SENT: time = sentAt
        case YAOK_TIME_RECEIVED: time = receivedAt
        default: throw YaOKError(.invalidArgument, "Unknown message time \(which)")
        }
        guard let time else {
            throw absent(which == YAOK_TIME_SENT ? "sent time (not sent yet, or incoming)" : "received time (outgoing)", "this message")
        }
        return time
    }
}
