internal import CSodium
import YaOKSupport
import YaOKWire

/// Secret material in libsodium's guarded memory: sodium_malloc places it between guard
/// pages and locks it in RAM (so it is never swapped to disk); deinit wipes and frees it.
/// Use it for long-lived secrets (identity keys, database keys), not per-message scratch.
public final class SecureBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    public let count: Int
    /// The slab slot holding the bytes (SecureBytes+Slab.swift); nil: a region of its own.
    private let slot: SecretSlot?

    /// Zero-filled secret storage of `count` bytes (0 is allowed: an empty PIN is still a
    /// value that must be checked, and its buffer pointer is still valid).
    public init(count: Int) throws {
        try Sodium.ensureInitialized()
        guard count >= 0, let p = sodium_malloc(max(count, 1)) else { throw YaOKError(.outOfMemory) }
        sodium_memzero(p, max(count, 1))
        pointer = p
        self.count = count
        slot = nil
    }

    /// Secret storage in `slot` (zeroed; wiped by the slot when this lets go of it).
    init(slot: SecretSlot) {
        pointer = slot.pointer
        count = slot.count
        self.slot = slot
    }

    /// Copies `bytes` in; the caller should wipe its own copy.
    public convenience init(copying bytes: [UInt8]) throws {
        try self.init(count: bytes.count)
        bytes.withUnsafeBytes { if let base = $0.baseAddress { pointer.copyMemory(from: base, byteCount: count) } }
    }

    /// Copies the bytes at `buffer` in (borrowed memory, e.g. a C argument).
    public convenience init(copying buffer: UnsafeRawBufferPointer) throws {
        try self.init(count: buffer.count)
        if let base = buffer.baseAddress { pointer.copyMemory(from: base, byteCount: count) }
    }

    /// The UTF-8 of `text`, copied straight from the string's storage (no intermediate
    /// array). For the Swift API's String PINs: the caller's String itself cannot be wiped.
    public convenience init(utf8 text: String) throws {
        var text = text
        try self.init(count: text.utf8.count)
        text.withUTF8 { if let base = $0.baseAddress { pointer.copyMemory(from: base, byteCount: count) } }
    }

    /// Fresh random secret bytes (randombytes_buf), generated in place.
    public static func random(count: Int) throws -> SecureBytes {
        let s = try SecureBytes(count: count)
        randombytes_buf(s.pointer, count)
        return s
    }

    deinit { if slot == nil { sodium_free(pointer) } }  // sodium_free wipes before freeing

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    /// Same length and bytes, compared in constant time (sodium_memcmp).
    public func constantTimeEquals(_ other: SecureBytes) -> Bool {
        guard count == other.count else { return false }
        return count == 0 || sodium_memcmp(pointer, other.pointer, count) == 0
    }

    /// A copy in ordinary memory (tests that search files for secrets). Callers wipe it.
    func copyBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }
}
