import CYaOK
import YaOK

/* ---- typed access: the outbox ---- */

final class OutboxHandle: Handle, SnapshotList {
    let entries: [OutboxEntry]
    static let entryName = "outbox entry"
    init(_ entries: [OutboxEntry]) { self.entries = entries }
}

/// `yaok_outbox_entry` up to `message_id` (its offset plus YAOK_MESSAGE_ID_BYTES).
private let outboxEntryMinimumSize = MemoryLayout<yaok_outbox_entry>.offset(of: \.message_id).map { $0 + Int(YAOK_MESSAGE_ID_BYTES) }
    ?? MemoryLayout<yaok_outbox_entry>.size

@c @implementation
public func yaok_outbox_list_new(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in OutboxHandle(try n.outbox()) }
}

@c @implementation
public func yaok_outbox_list_free(_ o: OpaquePointer?) { Handles.release(o, as: OutboxHandle.self) }

@c @implementation
public func yaok_outbox_list_count(_ o: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> Int32 {
    listCount(o, OutboxHandle.self, "outbox", out)
}

@c @implementation
public func yaok_outbox_list_entry(_ o: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<yaok_outbox_entry>?) -> Int32 {
    sizedEntry(o, OutboxHandle.self, "outbox", index, out, minimum: outboxEntryMinimumSize, "yaok_outbox_entry", yaok_outbox_entry.init)
}

extension yaok_outbox_entry {
    /// One outbox entry in the header's struct (`struct_size` is set when written).
    init(_ e: OutboxEntry) {
        self.init()
        status = e.status.abiCode
        contact_id = e.contactID
        withUnsafeMutableBytes(of: &message_id) { bytes in
            for (i, b) in e.messageID.bytes.enumerated() where i < bytes.count { bytes[i] = b }
        }
        attempts = UInt32(clamping: e.attempts)
        waiting_for_transport = e.waitingForTransport ? 1 : 0
        next_attempt_ms = e.nextAttemptAt
        expires_ms = e.expiresAt
    }
}
