/// What a non-blocking read or write did. A failure is an expected outcome on a network
/// (the peer reset, the radio went away), so it is a value to act on, not a thrown error.
package enum IOResult: Equatable, Sendable {
    /// Bytes read or written (> 0, except a write of nothing).
    case bytes(Int)
    /// EAGAIN/EWOULDBLOCK: wait for readiness.
    case wouldBlock
    /// The peer closed its side (a read returned 0).
    case endOfStream
    case failed(Errno)
}
