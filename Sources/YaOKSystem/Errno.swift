import Glibc

/// A system call's errno, as a value. Every wrapper in this module reads `errno` itself,
/// right after the call that set it, and hands the code back: a caller that read it later
/// could see the value left by whatever ran in between (a retain, an allocation, a log
/// line), as swift-system's `Errno` and NIOPosix's syscall wrappers avoid too.
package struct Errno: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    package let code: Int32

    package init(_ code: Int32) { self.code = code }

    /// The current thread's errno: only for the wrappers, straight after their call.
    static var current: Errno { Errno(errno) }

    /// EAGAIN or EWOULDBLOCK: a non-blocking descriptor has nothing (or no room) now.
    package var isWouldBlock: Bool { code == EAGAIN || code == EWOULDBLOCK }

    /// The system's reason: "Connection refused".
    package var description: String { Errno.reason(code) }

    package static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
}
