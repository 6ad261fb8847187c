internal import CSodium
import YaOKSupport

/// Guarded memory for a secret that lives for one call: a seal's ephemeral X25519 secret.
/// Each `SecureBytes` is its own sodium_malloc (guard pages, mlock, mprotect: several system
/// calls to make and as many to free), and issue 20's profile put about a twentieth of a
/// node's CPU there, mostly in seals. These regions are made once and kept: the same guard
/// pages, locked in RAM, wiped (sodium_memzero) as soon as each use ends, so a secret
/// stays in them no longer than in a region freed after use (sodium_free wipes the same way).
///
/// A small pool shared by every thread rather than a region per thread: sealing runs on
/// callers' threads and on each node's event thread, and a thread that ends would keep its
/// region.
enum SecureScratch {
    /// The one size pooled: an X25519 secret.
    static let regionLength = 32
    /// Regions kept between uses; more are made while more are in use at once.
    static let kept = 16
    private static let pool = Locked<[SecureBytes]>([])

    /// Runs `body` with `count` fresh random bytes (randombytes_buf) in guarded memory,
    /// wiped when it returns or throws. `body` must not keep the region (a region still
    /// referenced afterwards is not reused).
    static func withRandom<R>(count: Int, _ body: (SecureBytes) throws -> R) throws -> R {
        var region = try take(count: count)
        defer {
            region.wipe()
            if region.count == regionLength, isKnownUniquelyReferenced(&region) {
                pool.withLock { if $0.count < kept { $0.append(region) } }
            }
        }
        region.fillRandom()
        return try body(region)
    }

    /// A kept region, or a new one (no other reference to it is left here: a region still
    /// referenced after its use is not put back).
    private static func take(count: Int) throws -> SecureBytes {
        if count == regionLength, let kept = pool.withLock({ $0.popLast() }) { return kept }
        return try SecureBytes(count: count)
    }
}
