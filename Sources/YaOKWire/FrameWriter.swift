import Glibc
import YaOKSupport

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

    /// What a flush achieved. A failed link is an expected outcome on a radio link, so it
    /// is a result to act on (close the connection), not a thrown error.
    public enum FlushResult: Equatable, Sendable {
        /// Everything queued has been written.
        case drained
        /// The descriptor would block (EAGAIN/EWOULDBLOCK): wait until it is writable, then
        /// call `flush` again; it resumes exactly where it stopped.
        case wouldBlock
        /// write(2) failed with this errno (EPIPE, ECONNRESET, EBADF…) or accepted nothing:
        /// the link is unusable; close it. The queue is kept, for diagnostics only.
        case failed(errno: Int32)
    }

    /// Writes through `write`, which behaves like write(2): returns bytes written, or -1
    /// with `errno` set. EINTR is retried.
    public mutating func flush(write: (UnsafeRawBufferPointer) -> Int) -> FlushResult {
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
            if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) { return .wouldBlock }
            return .failed(errno: n == 0 ? 0 : code)
        }
        pending = []
        sent = 0
        return .drained
    }

    /// `flush` on a file descriptor (write(2)).
    public mutating func flush(fd: Int32) -> FlushResult {
        flush { buffer in
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
