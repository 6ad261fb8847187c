import Glibc

/// Outbound side of a stream link on a non-blocking descriptor: queues frames and writes
/// as much as the kernel takes, remembering where a partial write stopped. Not thread-safe:
/// one per connection, driven from the connection's event loop.
public struct FrameWriter {
    public let maxLength: Int
    private var pending: [UInt8] = []
    private var sent = 0

    public init(maxLength: Int = Frame.defaultMaxLength) {
        self.maxLength = maxLength
    }

    /// Bytes queued and not yet written.
    public var pendingByteCount: Int { pending.count - sent }
    public var isDrained: Bool { pendingByteCount == 0 }

    /// Queues one packet as a frame (`frameTooLarge` above `maxLength`).
    public mutating func enqueue(_ packet: [UInt8]) throws {
        let frame = try Frame.encode(packet, maxLength: maxLength)
        compact()
        pending += frame
    }

    public mutating func enqueueKeepalive() {
        compact()
        pending += Frame.keepalive
    }

    /// Writes through `write`, which behaves like write(2): returns bytes written, or -1
    /// with `errno` set. Returns true once everything queued is written, false when the
    /// descriptor would block (EAGAIN/EWOULDBLOCK: wait for writability and call again).
    /// EINTR is retried. Any other error throws `linkFailed`.
    public mutating func flush(write: (UnsafeRawBufferPointer) -> Int) throws -> Bool {
        while sent < pending.count {
            let n = pending.withUnsafeBytes { all in
                write(UnsafeRawBufferPointer(rebasing: all[sent...]))
            }
            if n > 0 {
                sent += min(n, pending.count - sent)
                continue
            }
            let code = errno
            if n < 0 && code == EINTR { continue }
            if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) { return false }
            throw YaOKError(.linkFailed, n == 0 ? "The link accepted no bytes" : "Link write failed: errno \(code)")
        }
        pending = []
        sent = 0
        return true
    }

    /// `flush` on a file descriptor (write(2)).
    public mutating func flush(fd: Int32) throws -> Bool {
        try flush { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            return Glibc.write(fd, base, buffer.count)
        }
    }

    /// Drops the written prefix so the queue does not grow with everything ever sent.
    private mutating func compact() {
        guard sent > 0 else { return }
        pending.removeFirst(sent)
        sent = 0
    }
}
