import CYaOK
import YaOK

/* ---- typed access: the outbox ---- */

final class OutboxHandle: Handle {
    let entries: [OutboxEntry]
    init(_ entries: [OutboxEntry]) { self.entries = entries }
}

/// `yaok_outbox_entry` up to `message_id` (its offset plus 16 bytes).
private let outboxEntryMinimumSize = MemoryLayout<yaok_outbox_entry>.offset(of: \.message_id).map { $0 + 16 } ?? MemoryLayout<yaok_outbox_entry>.size

@c @implementation
public func yaok_outbox_list_new(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in OutboxHandle(try n.outbox()) }
}

@c @implementation
public func yaok_outbox_list_free(_ o: OpaquePointer?) { Handles.release(o, as: OutboxHandle.self) }

@c @implementation
public func yaok_outbox_list_count(_ o: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> Int32 {
    fillValue({ try Handles.borrow(o, as: OutboxHandle.self, "outbox") }, out, "out_count") { o in o.entries.count }
}

@c @implementation
public func yaok_outbox_list_entry(_ o: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<yaok_outbox_entry>?) -> Int32 {
    sizedEntry(o, OutboxHandle.self, "outbox", out, minimum: outboxEntryMinimumSize,
               "yaok_outbox_entry") { o, size in
        let e = try element(o.entries, index, "outbox entry")
        var c = yaok_outbox_entry()
        c.struct_size = size
        c.status = e.status.abiCode
        c.contact_id = e.contactID
        withUnsafeMutableBytes(of: &c.message_id) { bytes in
            for (i, b) in e.messageID.bytes.enumerated() where i < bytes.count { bytes[i] = b }
        }
        c.attempts = UInt32(clamping: e.attempts)
        c.waiting_for_transport = e.waitingForTransport ? 1 : 0
        c.next_attempt_ms = e.nextAttemptAt
        c.expires_ms = e.expiresAt
        return c
    }
}
