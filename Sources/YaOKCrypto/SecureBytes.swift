internal import CSodium
import Glibc
import YaOKSupport
import YaOKWire

/// Secret material in libsodium's guarded memory: sodium_malloc places it between guard
/// pages and locks it in RAM (so it is never swapped to disk); deinit wipes and frees it.
/// Use it for long-lived secrets (identity keys, database keys); a per-call secret (a
/// seal's ephemeral key) borrows a kept region instead (SecureScratch).
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
        SecureBytes.countAllocation()
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

    /// Zeroes the bytes (sodium_memzero), keeping the region.
    func wipe() { sodium_memzero(pointer, max(count, 1)) }

    /// Overwrites the bytes with fresh random ones (randombytes_buf).
    func fillRandom() { randombytes_buf(pointer, count) }

    // MARK: - Counting allocations (tests)

    /// Threads counting their guarded allocations, and how many each made so far; and how
    /// many every thread made since the process started.
    private static let counting = Locked<(threads: [pthread_t: Int], all: Int)>(([:], 0))

    private static func countAllocation() {
        counting.withLock { counts in
            counts.all += 1
            let thread = pthread_self()
            if let n = counts.threads[thread] { counts.threads[thread] = n + 1 }
        }
    }

    /// Package-only, for tests and benchmarks: guarded regions made so far by every thread.
    package static var allocationsSoFar: Int { counting.withLock { $0.all } }

    /// Package-only, for tests: runs `body` and says how many guarded regions were made on
    /// the calling thread meanwhile (each one a sodium_malloc and, when released, a
    /// sodium_free: the system calls issue 20's profile found per seal).
    package static func countingAllocations<R>(_ body: () throws -> R) rethrows -> (result: R, allocations: Int) {
        let thread = pthread_self()
        counting.withLock { $0.threads[thread] = 0 }
        defer { counting.withLock { _ = $0.threads.removeValue(forKey: thread) } }
        let result = try body()
        return (result, counting.withLock { $0.threads[thread] ?? 0 })
    }

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
