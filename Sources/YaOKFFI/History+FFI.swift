import CYaOK
import YaOK

/* ---- typed access: a page of history ---- */

/// One history page: its messages as handles-to-be, and the older cursor lent.
final class HistoryHandle: Handle {
    let messages: [Message]
    let olderCursor: LentString?
    init(_ page: HistoryPage) throws {
        messages = page.messages
        olderCursor = try page.olderCursor.map { try LentString($0) }
    }
}

private func history(_ pointer: OpaquePointer?) throws -> HistoryHandle {
    try Handles.borrow(pointer, as: HistoryHandle.self, "history")
}

@c @implementation
public func yaok_history_new(_ node: OpaquePointer?, _ conversationID: Int64, _ cursor: UnsafePointer<CChar>?,
                             _ limit: UInt32, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in
        try HistoryHandle(try n.history(conversationID, before: try cursor.map { try string($0, "cursor") }, limit: Int(limit)))
    }
}

@c @implementation
public func yaok_history_free(_ h: OpaquePointer?) { Handles.release(h, as: HistoryHandle.self) }

@c @implementation
public func yaok_history_count(_ h: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> Int32 {
    fillValue({ try history(h) }, out, "out_count") { h in h.messages.count }
}

@c @implementation
public func yaok_history_message(_ h: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    fillValue({ try history(h) }, out, "out") { h in Handles.make(try MessageHandle(try element(h.messages, index, "message"))) }
}

@c @implementation
public func yaok_history_older_cursor(_ h: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    boundary {
        let h = try history(h)
        let out = try required(out, "out_cursor")
        guard let cursor = h.olderCursor else {
            throw YaOKError(.notFound, "This page reaches the first message of the conversation: there is no older page")
        }
        cursor.lend(to: out)
    }
}

/// Element `index` of a snapshot (size_t arrives as Int: an index above Int.max is negative).
func element<T>(_ items: [T], _ index: Int, _ what: String) throws -> T {
    guard index >= 0, index < items.count else {
        throw YaOKError(.notFound, "No \(what) at index \(UInt(bitPattern: index)) (there are \(items.count))")
    }
    return items[index]
}
