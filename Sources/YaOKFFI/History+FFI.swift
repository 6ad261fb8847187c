import CYaOK
import YaOK

/* ---- typed access: a page of history ---- */

/// One history page: its messages as handles-to-be, and the older cursor lent.
final class HistoryHandle: Handle, SnapshotList {
    let entries: [Message]
    static let entryName = "message"
    let olderCursor: LentString?
    init(_ page: HistoryPage) throws {
        entries = page.messages
        olderCursor = try page.olderCursor.map { try LentString($0) }
    }
}

extension HistoryHandle {
    func lentOlderCursor() throws -> LentString {
        guard let olderCursor else {
            throw YaOKError(.notFound, "This page reaches the first message of the conversation: there is no older page")
        }
        return olderCursor
    }
}

private func history(_ pointer: OpaquePointer?) throws -> HistoryHandle {
    try Handles.borrow(pointer, as: HistoryHandle.self, "history")
}

@c @implementation
public func yaok_history_new(_ node: OpaquePointer?, _ conversationID: Int64, _ cursor: UnsafePointer<CChar>?,
                             _ limit: UInt32, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in try HistoryHandle(try historyPage(n, conversationID, cursor, limit)) }
}

/// A page of history before the optional `cursor` (yaok_history_new, yaok_message_history).
func historyPage(_ n: Node, _ conversationID: Int64, _ cursor: UnsafePointer<CChar>?, _ limit: UInt32) throws -> HistoryPage {
    try n.history(conversationID, before: try cursor.map { try string($0, "cursor") }, limit: Int(limit))
}

@c @implementation
public func yaok_history_free(_ h: OpaquePointer?) { Handles.release(h, as: HistoryHandle.self) }

@c @implementation
public func yaok_history_count(_ h: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> Int32 {
    listCount(h, HistoryHandle.self, "history", out)
}

@c @implementation
public func yaok_history_message(_ h: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    fillValue({ try history(h) }, out, "out") { h in Handles.make(try MessageHandle(try h.entry(index))) }
}

@c @implementation
public func yaok_history_older_cursor(_ h: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    fillValue({ try history(h) }, out, "out_cursor") { h in UnsafePointer(try h.lentOlderCursor().pointer) }
}
