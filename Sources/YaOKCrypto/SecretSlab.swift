internal import CSodium
import Glibc
import YaOKSupport

/// Many small secrets of one size (32-byte keys) in shared guarded memory: one sodium_malloc
/// region per chunk of slots that fills one locked page, instead of one region per secret.
///
/// Why: each sodium_malloc maps guard pages around one locked page (four memory mappings,
/// measured). The caches that hold thousands of keys (Identity's static-static secrets, up to
/// 4,096; the ring cache's own keys, up to 1,024) then need thousands of locked pages, past
/// RLIMIT_MEMLOCK (often 64 KiB, 8 MiB here), where libsodium's mlock fails without a word
/// and the secrets may be swapped to disk; and past about 16,000 regions every sodium_malloc
/// fails (the identity's and the PIN's too). In a slab, 4,096 keys take 33 regions.
///
/// A slot is wiped (sodium_memzero) when it is released; a chunk's region is freed (and
/// wiped by sodium_free) when its last slot goes. Slots keep their slab alive, so dropping
/// the owner (the identity when the node locks) with its slots frees every region.
/// Thread-safe: slots may be taken and released from any thread.
public final class SecretSlab: @unchecked Sendable {
    /// Bytes per slot.
    public let slotSize: Int
    /// Slots per region: as many as fit one page beside libsodium's 16-byte canary (the
    /// canary sits before the returned pointer, in the same locked pages: 128 slots of 32
    /// bytes would need two).
    let slotsPerChunk: Int

    /// One guarded region and which of its slots are free.
    final class Chunk {
        let base: UnsafeMutableRawPointer
        var free: [Int]
        var live = 0
        init(base: UnsafeMutableRawPointer, slots: Int) {
            self.base = base
            free = Array((0..<slots).reversed())
        }
    }

    /// The regions allocated and not yet freed (each has at least one live slot).
    private let chunks = Locked<[Chunk]>([])

    /// The owner of the forward-secrecy rings' own keys (ReceiverKeyPair.generate and the
    /// store's reads): one per process, its regions freed as the keys go.
    public static let receiverKeys = SecretSlab(slotSize: 32)

    public init(slotSize: Int) {
        let page = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
        self.slotSize = max(slotSize, 1)
        slotsPerChunk = max((page - Self.canarySize) / self.slotSize, 1)
    }

    /// libsodium's canary before each sodium_malloc'd block (CANARY_SIZE in utils.c).
    static let canarySize = 16

    /// A zeroed slot. Throws `outOfMemory` when a new region cannot be had.
    public func allocate() throws -> SecretSlot {
        try Sodium.ensureInitialized()
        let (chunk, index) = try chunks.withLock { chunks -> (Chunk, Int) in
            if let chunk = chunks.last(where: { !$0.free.isEmpty }), let index = chunk.free.popLast() {
                chunk.live += 1
                return (chunk, index)
            }
            let bytes = slotsPerChunk * slotSize
            guard let base = sodium_malloc(bytes) else { throw YaOKError(.outOfMemory, "No guarded memory for a secret") }
            sodium_memzero(base, bytes)
            // sodium_malloc ignores its own mlock's failure (past RLIMIT_MEMLOCK): lock again
            // to learn whether the region may be swapped, and count it for the diagnostics.
            if sodium_mlock(base, bytes) != 0 { SecureMemory.recordLockFailure() }
            SecureMemory.regionAllocated()
            let chunk = Chunk(base: base, slots: slotsPerChunk)
            chunks.append(chunk)
            guard let index = chunk.free.popLast() else { throw YaOKError(.internal, "Empty slab chunk") }
            chunk.live = 1
            return (chunk, index)
        }
        return SecretSlot(slab: self, chunk: chunk, pointer: chunk.base + index * slotSize, index: index)
    }

    /// Wipes slot `index` of `chunk`; frees the region when it was the chunk's last.
    fileprivate func release(_ chunk: Chunk, _ index: Int) {
        chunks.withLock { chunks in
            sodium_memzero(chunk.base + index * slotSize, slotSize)
            chunk.free.append(index)
            chunk.live -= 1
            guard chunk.live == 0 else { return }
            chunks.removeAll { $0 === chunk }
            sodium_free(chunk.base)  // wipes the whole region first
            SecureMemory.regionFreed()
        }
    }

    deinit {
        // Slots keep the slab alive, so no region is left here; freed anyway should one be.
        chunks.withLock { chunks in
            for chunk in chunks { sodium_free(chunk.base); SecureMemory.regionFreed() }
            chunks = []
        }
    }

    /// Guarded regions this slab holds now.
    public var regionCount: Int { chunks.withLock { $0.count } }

    /// Test hook: the bytes of slot `index` in the region that holds `live` (which keeps the
    /// region mapped), e.g. a slot released a moment ago.
    package func bytesForTesting(slot index: Int, besides live: SecretSlot) -> [UInt8] {
        chunks.withLock { _ in Array(UnsafeRawBufferPointer(start: live.chunk.base + index * slotSize, count: slotSize)) }
    }
}

/// One secret in a `SecretSlab`: `slotSize` bytes, zero at first, wiped when released.
public final class SecretSlot: @unchecked Sendable {
    let slab: SecretSlab
    let chunk: SecretSlab.Chunk
    let pointer: UnsafeMutableRawPointer
    /// Its place in its region (tests read it back after release).
    package let index: Int

    fileprivate init(slab: SecretSlab, chunk: SecretSlab.Chunk, pointer: UnsafeMutableRawPointer, index: Int) {
        self.slab = slab
        self.chunk = chunk
        self.pointer = pointer
        self.index = index
    }

    deinit { slab.release(chunk, index) }

    public var count: Int { slab.slotSize }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }
}

/// Process-wide counts of guarded memory, for the node's diagnostics.
public enum SecureMemory {
    private static let counts = Locked<(lockFailures: Int, regions: Int)>((0, 0))

    /// Slab regions whose mlock failed (RLIMIT_MEMLOCK reached): their secrets may be
    /// swapped to disk. Should stay 0.
    public static var lockFailures: Int { counts.withLock { $0.lockFailures } }
    /// Slab regions allocated and not yet freed, over all slabs.
    public static var slabRegions: Int { counts.withLock { $0.regions } }

    static func recordLockFailure() { counts.withLock { $0.lockFailures += 1 } }
    static func regionAllocated() { counts.withLock { $0.regions += 1 } }
    static func regionFreed() { counts.withLock { $0.regions -= 1 } }
}
