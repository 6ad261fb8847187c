internal import CSodium
import YaOKSupport
import YaOKWire

/// Secret material in libsodium's guarded memory: sodium_malloc places it between guard
/// pages and locks it in RAM (so it is never swapped to disk); deinit wipes and frees it.
/// Use it for long-lived secrets (identity keys, database keys), not per-message scratch.
public final class SecureBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    public let count: Int

    /// Zero-filled secret storage of `count` bytes.
    public init(count: Int) throws {
        try Sodium.ensureInitialized()
        guard count > 0, let p = sodium_malloc(count) else { throw YaOKError(.outOfMemory) }
        sodium_memzero(p, count)
        pointer = p
        self.count = count
    }

    /// Copies `bytes` in; the caller should wipe its own copy.
    public convenience init(copying bytes: [UInt8]) throws {
        try self.init(count: bytes.count)
        bytes.withUnsafeBytes { pointer.copyMemory(from: $0.baseAddress!, byteCount: count) }
    }

    /// Fresh random secret bytes (randombytes_buf), generated in place.
    public static func random(count: Int) throws -> SecureBytes {
        let s = try SecureBytes(count: count)
        randombytes_buf(s.pointer, count)
        return s
    }

    deinit { sodium_free(pointer) }  // sodium_free wipes before freeing

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    /// A copy in ordinary memory (tests that search files for secrets). Callers wipe it.
    func copyBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }
}
