import Glibc
internal import COpenSSL

/// A BIO over a socket descriptor that sends with MSG_NOSIGNAL. OpenSSL's own socket BIO
/// calls write(2), which raises SIGPIPE when the peer has gone; the host process may not
/// ignore SIGPIPE and a library must not change its signal handling, so a vanished peer
/// has to arrive as EPIPE instead (as in the LAN transport's `Socket.send`). The
/// descriptor must be a socket (send(2) on anything else fails with ENOTSOCK), and it
/// stays the caller's: freeing the BIO does not close it.
enum SocketBIO {
    /// What the BIO keeps beside the descriptor: the errno of the last failed call (for
    /// the message when OpenSSL says only SSL_ERROR_SYSCALL) and whether recv(2) saw the
    /// end of the stream (BIO_eof: how OpenSSL tells an EOF from an error).
    struct State {
        let fd: Int32
        var lastError: Int32 = 0
        var atEndOfStream = false
    }

    // One method table for the process, made on first use (a Swift global is initialised
    // once, thread-safely); OpenSSL only reads it afterwards, from any thread.
    nonisolated(unsafe) private static let method: OpaquePointer? = makeMethod()

    /// A new BIO reading and writing `fd`; nil if OpenSSL is out of memory.
    static func make(fd: Int32) -> OpaquePointer? {
        guard let method, let bio = BIO_new(method) else { return nil }
        let state = UnsafeMutablePointer<State>.allocate(capacity: 1)
        state.initialize(to: State(fd: fd))
        BIO_set_data(bio, state)
        BIO_set_init(bio, 1)
        return bio
    }

    /// The errno of the last send/recv that failed (0 if none did).
    static func lastError(_ bio: OpaquePointer?) -> Int32 {
        guard let bio, let state = state(bio) else { return 0 }
        return state.pointee.lastError
    }

    private static func state(_ bio: OpaquePointer) -> UnsafeMutablePointer<State>? {
        BIO_get_data(bio)?.assumingMemoryBound(to: State.self)
    }

    private static func makeMethod() -> OpaquePointer? {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "yaok socket") else { return nil }
        _ = BIO_meth_set_write_ex(method) { bio, data, length, written in
            guard let bio, let state = SocketBIO.state(bio) else { return 0 }
            yaok_BIO_clear_retry_flags(bio)
            while true {
                let n = send(state.pointee.fd, data, length, Int32(MSG_NOSIGNAL))
                if n >= 0 {
                    written?.pointee = n
                    return 1
                }
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK {
                    yaok_BIO_set_retry_write(bio)
                } else {
                    state.pointee.lastError = code
                }
                return 0
            }
        }
        _ = BIO_meth_set_read_ex(method) { bio, data, length, read in
            guard let bio, let state = SocketBIO.state(bio) else { return 0 }
            yaok_BIO_clear_retry_flags(bio)
            while true {
                let n = recv(state.pointee.fd, data, length, 0)
                if n > 0 {
                    read?.pointee = n
                    return 1
                }
                if n == 0 {
                    state.pointee.atEndOfStream = true
                    return 0
                }
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK {
                    yaok_BIO_set_retry_read(bio)
                } else {
                    state.pointee.lastError = code
                }
                return 0
            }
        }
        _ = BIO_meth_set_ctrl(method) { bio, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH:
                return 1  // nothing is buffered here
            case BIO_CTRL_EOF:
                guard let bio, let state = SocketBIO.state(bio) else { return 1 }
                return state.pointee.atEndOfStream ? 1 : 0
            default:
                return 0
            }
        }
        _ = BIO_meth_set_create(method) { _ in 1 }
        _ = BIO_meth_set_destroy(method) { bio in
            guard let bio else { return 0 }
            if let state = SocketBIO.state(bio) {
                state.deinitialize(count: 1)
                state.deallocate()
                BIO_set_data(bio, nil)
            }
            BIO_set_init(bio, 0)
            return 1
        }
        return method
    }
}
