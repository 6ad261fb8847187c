internal import CSodium
import YaOKSupport

/// Secrets kept by the thousand (the forward-secrecy rings' own keys) live in a SecretSlab's
/// slots rather than a guarded region each: same API, one locked page per 127 keys.
extension SecureBytes {
    /// Zero-filled secret storage of `slab.slotSize` bytes in a slot of `slab`.
    package convenience init(in slab: SecretSlab) throws {
        self.init(slot: try slab.allocate())
    }

    /// Copies `bytes` (exactly `slab.slotSize` of them) into a slot of `slab`; the caller
    /// wipes its own copy.
    package convenience init(copying bytes: ArraySlice<UInt8>, in slab: SecretSlab) throws {
        guard bytes.count == slab.slotSize else { throw YaOKError(.invalidArgument, "A slab secret is \(slab.slotSize) bytes") }
        try self.init(in: slab)
        withUnsafeMutableBytes { dst in bytes.withUnsafeBytes { dst.copyMemory(from: $0) } }
    }

    /// Fresh random bytes (randombytes_buf) in a slot of `slab`.
    package static func random(in slab: SecretSlab) throws -> SecureBytes {
        let s = try SecureBytes(in: slab)
        s.withUnsafeMutableBytes { if let base = $0.baseAddress { randombytes_buf(base, $0.count) } }
        return s
    }
}
