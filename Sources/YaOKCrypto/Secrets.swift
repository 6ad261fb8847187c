internal import CSodium
import YaOKSupport
import YaOKWire

/// Wiping memory the core does not own (e.g. a buffer handed back through the C ABI).
public enum Secrets {
    /// sodium_memzero: zeroes `count` bytes in a way the compiler cannot elide.
    public static func wipe(_ pointer: UnsafeMutableRawPointer, _ count: Int) {
        sodium_memzero(pointer, count)
    }
}
