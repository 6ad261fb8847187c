import Testing
@testable import YaOKSupport
@testable import YaOKCrypto
@testable import YaOKNode

/// SecretSlab: many 32-byte secrets per guarded region, each slot wiped when released, every
/// region freed when the last slot goes (so dropping the owner frees them all).
@Suite struct SecretSlabTests {
    @Test func fourThousandStaticSecretsTakeAtMost64Regions() throws {
        let alice = try Identity(name: "Alice")
        for _ in 0..<Identity.staticSharedCap {
            let key = (0..<32).map { _ in UInt8.random(in: 0...255) }
            _ = try alice.withStaticShared(key) { $0.count }
        }
        #expect(alice.staticSharedSlab.regionCount <= 64)
        #expect(alice.staticSharedSlab.regionCount >= Identity.staticSharedCap / alice.staticSharedSlab.slotsPerChunk)
    }

    @Test func aSlotIsWipedWhenReleased() throws {
        let slab = SecretSlab(slotSize: 32)
        var first: SecretSlot? = try slab.allocate()
        let second = try slab.allocate()  // keeps the region mapped after `first` goes
        let index = try #require(first?.index)
        first?.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0xAB) }
        #expect(slab.bytesForTesting(slot: index, besides: second) == [UInt8](repeating: 0xAB, count: 32))
        first = nil
        #expect(slab.bytesForTesting(slot: index, besides: second) == [UInt8](repeating: 0, count: 32))
        #expect(slab.regionCount == 1)
    }

    @Test func aSecureBytesInASlabLetsGoOfItsSlot() throws {
        let slab = SecretSlab(slotSize: 32)
        var secret: SecureBytes? = try SecureBytes.random(in: slab)
        #expect(secret?.count == 32)
        #expect(slab.regionCount == 1)
        secret = nil
        #expect(slab.regionCount == 0)
        #expect(throws: YaOKError.self) { try SecureBytes(copying: [1, 2, 3][...], in: slab) }
    }

    /// The node locks by dropping its identity: the static-static secrets' regions all go.
    @Test func droppingTheIdentityFreesEveryRegion() throws {
        weak var slab: SecretSlab?
        do {
            let alice = try Identity(name: "Alice")
            for _ in 0..<300 {
                _ = try alice.withStaticShared((0..<32).map { _ in UInt8.random(in: 0...255) }) { $0.count }
            }
            #expect(alice.staticSharedSlab.regionCount == 3)
            slab = alice.staticSharedSlab
        }
        // The slots hold their slab: it is gone only once every slot and region is.
        #expect(slab == nil)
    }

    /// The node's diagnostics show the process's slab regions and failed locks.
    @Test func diagnosticsCountSlabRegionsAndLockFailures() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        defer { node.close() }
        let slot = try SecretSlab(slotSize: 32).allocate()  // one region live at least
        let text = try node.diagnostics().serialized
        #expect(text.contains("\"secure_memory\":{\"lock_failures\":\(SecureMemory.lockFailures)"))
        #expect(SecureMemory.slabRegions >= 1 && text.contains("\"slab_regions\":"))
        _ = slot
    }
}
