import Glibc
import YaOKSupport

/// Outbound side of a stream link on a non-blocking descriptor: queues frames and writes
/// them in as few calls as the kernel allows — all queued frames in one gathering write
/// (sendmsg/writev), not one write per frame — remembering where a partial write stopped.
/// A packet is not copied into a send buffer: the queue holds each frame's two-byte prefix
/// and the packet's own array. Not thread-safe: one per connection, driven from the
/// connection's event loop.
public struct FrameWriter {
    public let maxLength: Int
    /// Prefixes and packets, in order; the first may be partly written (`sent` bytes of it).
    private var chunks: [[UInt8]] = []
    private var first = 0
    private var sent = 0
    public private(set) var pendingByteCount = 0

    public init(maxLength: Int = Frame.defaultMaxLength) {
        self.maxLength = maxLength
    }

    public var isDrained: Bool { pendingByteCount == 0 }

    /// Queues one packet as a frame (`frameTooLarge` above `maxLength`).
    public mutating func enqueue(_ packet: [UInt8]) throws {
        try Frame.checkLength(packet.count, maxLength: maxLength)
        append([UInt8(packet.count >> 8), UInt8(packet.count & 0xff)])
        append(packet)
    }

    public mutating func enqueueKeepalive() {
        append(Frame.keepalive)
    }

    private mutating func append(_ chunk: [UInt8]) {
        chunks.append(chunk)
        pendingByteCount += chunk.count
    }

    /// What one gathering write did.
    public enum WriteOutcome: Equatable, Sendable {
        /// Took this many bytes (from the first buffer on).
        case wrote(Int)
        case wouldBlock
        /// Failed with this errno (0: it took nothing, as write(2) returning 0).
        case failed(errno: Int32)
    }

    /// What a flush achieved. A failed link is an expected outcome on a radio link, so it
    /// is a result to act on (close the connection), not a thrown error.
    public enum FlushResult: Equatable, Sendable {
        /// Everything queued has been written.
        case drained
        /// The descriptor would block (EAGAIN/EWOULDBLOCK): wait until it is writable, then
        /// call `flush` again; it resumes exactly where it stopped.
        case wouldBlock
        /// The write failed with this errno (EPIPE, ECONNRESET, EBADF…) or accepted nothing:
        /// the link is unusable; close it. The queue is kept, for diagnostics only.
        case failed(errno: Int32)
    }

    /// Writes through `write`, which takes every queued buffer in order (the first from where
    /// the last write stopped) and says what it wrote (a sendmsg/writev with errno read
    /// inside, so nothing in between can change it). Loops until drained or blocked: one
    /// call when the kernel takes everything.
    public mutating func flush(write: ([UnsafeRawBufferPointer]) -> WriteOutcome) -> FlushResult {
        while pendingByteCount > 0 {
            let outcome = withBuffers(write)
            switch outcome {
            case .wrote(let n) where n > 0:
                consume(n)
            case .wrote:
                return .failed(errno: 0)
            case .wouldBlock:
                return .wouldBlock
            case .failed(let code):
                return .failed(errno: code)
            }
        }
        chunks = []
        first = 0
        sent = 0
        return .drained
    }

    /// `flush` on a file descriptor (writev(2); EINTR retried).
    public mutating func flush(fd: Int32) -> FlushResult {
        flush { buffers in
            var vectors = buffers.map { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
            while true {
                let n = writev(fd, &vectors, Int32(vectors.count))
                if n >= 0 { return .wrote(n) }
                let code = errno
                if code == EINTR { continue }
                return code == EAGAIN || code == EWOULDBLOCK ? .wouldBlock : .failed(errno: code)
            }
        }
    }

    /// The most buffers one write is handed (the kernel's UIO_MAXIOV); the rest go in the
    /// next call of the same flush.
    public static let maxBuffersPerWrite = 1024

    /// Calls `body` with pointers to the pending buffers (the first rebased past `sent`), at
    /// most `maxBuffersPerWrite`: each is borrowed in a nested `withUnsafeBytes`, so the
    /// pointers are valid exactly for the call.
    private func withBuffers<R>(_ body: ([UnsafeRawBufferPointer]) -> R) -> R {
        let end = min(chunks.count, first + FrameWriter.maxBuffersPerWrite)
        func nest(_ index: Int, _ gathered: inout [UnsafeRawBufferPointer]) -> R {
            guard index < end else { return body(gathered) }
            return chunks[index].withUnsafeBytes { bytes in
                gathered.append(index == first ? UnsafeRawBufferPointer(rebasing: bytes[sent...]) : bytes)
                return nest(index + 1, &gathered)
            }
        }
        var gathered: [UnsafeRawBufferPointer] = []
        gathered.reserveCapacity(end - first)
        return nest(first, &gathered)
    }

    /// Drops `n` written bytes from the front of the queue.
    private mutating func consume(_ n: Int) {
        var left = min(n, pendingByteCount)
        pendingByteCount -= left
        while left > 0 {
            let remaining = chunks[first].count - sent
            if left < remaining {
                sent += left
                return
            }
            left -= remaining
            first += 1
            sent = 0
        }
        // Drop the written prefix now and then, so the queue does not grow with everything sent.
        if first >= 64, first * 2 >= chunks.count {
            chunks.removeFirst(first)
            first = 0
        }
    }
}
