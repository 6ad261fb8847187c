import Foundation
import Testing
@testable import YaOKCrypto
@testable import YaOKStore

/// The caches that hold secrets by the thousand cost a few guarded regions, not one each:
/// counted as the memory mappings (/proc/self/maps) that hold the secrets, one each when
/// every secret is a sodium_malloc region of its own (which adds four: guard pages around a
/// locked page). Read through the secrets' `withUnsafeBytes`, which a region and a slab slot
/// both have, so that it measures either way of storing them. The process's whole count is
/// only printed: the tests beside this one add to it meanwhile (1,564 in a CI run; 16,384
/// from one that allocates 4,096 regions), so no bound on it is both tight and safe.
@Suite(.serialized) struct StaticSharedMappingsTests {
    /// A /proc file whole: read(2) to the end (Foundation's String(contentsOfFile:) stops
    /// early on /proc files, which report a size of 0: it counted 29 of 16,000 mappings).
    static func procFile(_ path: String) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func mappings() -> Int {
        procFile("/proc/self/maps").split(separator: "\n").count
    }

    /// How many of the process's mappings hold at least one of `addresses`: the secrets' own
    /// mappings, which no other test can add to (one each when every secret is a guarded
    /// region; a few slab pages' worth when they share them), unlike the process's count.
    static func mappingsHolding(_ addresses: [UInt]) -> Int {
        let ranges = procFile("/proc/self/maps").split(separator: "\n").compactMap { line -> Range<UInt>? in
            let bounds = line.prefix { $0 != " " }.split(separator: "-")
            guard bounds.count == 2, let lo = UInt(bounds[0], radix: 16), let hi = UInt(bounds[1], radix: 16) else { return nil }
            return lo..<hi
        }.sorted { $0.lowerBound < $1.lowerBound }
        var holding = Set<UInt>()
        for address in addresses {
            // The last range starting at or below `address` (the ranges do not overlap).
            var (lo, hi) = (0, ranges.count)
            while lo < hi {
                let mid = (lo + hi) / 2
                if ranges[mid].lowerBound <= address { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0, ranges[lo - 1].contains(address) { holding.insert(ranges[lo - 1].lowerBound) }
        }
        return holding.count
    }

    static func lockedKiB() -> Int {
        let status = procFile("/proc/self/status")
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmLck:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    /// 4,096 static-static secrets (the cache's cap): was 4,096 guarded regions, 16,384
    /// mappings and 4,096 locked pages (past an 8 MiB RLIMIT_MEMLOCK: without CAP_IPC_LOCK the
    /// last 2,048 were left unlocked, silently).
    @Test func staticSharedCacheOfAFullCapTakesFewMappings() throws {
        let alice = try Identity(name: "Alice")
        let (maps0, locked0) = (Self.mappings(), Self.lockedKiB())
        for _ in 0..<Identity.staticSharedCap {
            let key = (0..<32).map { _ in UInt8.random(in: 0...255) }
            _ = try alice.withStaticShared(key) { $0.count }
        }
        #expect(alice.staticSharedCache.withLock { $0.count } == Identity.staticSharedCap)
        let (maps1, locked1) = (Self.mappings(), Self.lockedKiB())
        print("static-shared cache, 4,096 keys: +\(maps1 - maps0) mappings, +\(locked1 - locked0) KiB locked")
        // The secrets' own mappings: 4,096 when each was a guarded region, about 33 slab pages
        // now, whatever the tests beside this one map meanwhile.
        let addresses = alice.staticSharedCache.withLock { cache in
            cache.values.map { $0.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) } }
        }
        let holding = Self.mappingsHolding(addresses)
        print("static-shared cache, 4,096 keys: in \(holding) mappings")
        #expect(holding <= 256)
    }

    /// 1,024 own keys in the ring cache (its bound): was 1,024 regions and 4,096 mappings.
    @Test func ringCacheOfAFullBoundTakesFewMappings() throws {
        let cache = ReceiverKeyRingCache()
        let cipher = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
        let (maps0, locked0) = (Self.mappings(), Self.lockedKiB())
        let rings = ReceiverKeyRingCache.ownKeyCapacity / ReceiverKeyRing.cap
        for contact in 0..<rings {
            var own: [ReceiverKeyRing.OwnKey] = []
            for id in 1...UInt32(ReceiverKeyRing.cap) {
                own.append(ReceiverKeyRing.OwnKey(pair: try ReceiverKeyPair.generate(id: id), createdMs: 0, supersededMs: nil))
            }
            let ring = ReceiverKeyRing(own: own, lastID: UInt32(ReceiverKeyRing.cap), peerKey: nil, pending: [:], releasedPeer: 0)
            cache.keep(.init(ring: ring, state: nil), Int64(contact), cipher: cipher, inTransaction: false)
        }
        #expect(cache.ownKeysKept == ReceiverKeyRingCache.ownKeyCapacity)
        let (maps1, locked1) = (Self.mappings(), Self.lockedKiB())
        print("ring cache, 1,024 own keys: +\(maps1 - maps0) mappings, +\(locked1 - locked0) KiB locked")
        // The kept keys' own mappings: 1,024 as guarded regions, about 9 slab pages now.
        let kept = (0..<rings).flatMap { cache.ring(Int64($0), cipher: cipher)?.own ?? [] }
        #expect(kept.count == ReceiverKeyRingCache.ownKeyCapacity)
        let holding = Self.mappingsHolding(kept.map { $0.pair.secret.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) } })
        print("ring cache, 1,024 own keys: in \(holding) mappings")
        #expect(holding <= 128)
    }
}
