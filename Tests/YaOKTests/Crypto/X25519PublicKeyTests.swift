import Testing
import CSodium
import YaOKSupport
@testable import YaOKCrypto

/// `Sodium.x25519PublicKey` makes X25519 public keys from the Ed25519 base point and
/// Field25519's map, not with crypto_scalarmult_base: its bytes must be that function's,
/// for every secret (each envelope's ephemeral key is on the wire).
@Suite struct X25519PublicKeyTests {
    static func ours(_ secret: [UInt8]) throws -> [UInt8] {
        try secret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
    }

    static func libsodium(_ secret: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        #expect(crypto_scalarmult_base(&out, secret) == 0)
        return out
    }

    @Test func randomSecretsGiveLibsodiumsBytes() throws {
        for _ in 0..<2_000 {
            let secret = Sodium.randomBytes(32)
            #expect(try Self.ours(secret) == Self.libsodium(secret), "secret \(Hex.encode(secret))")
        }
    }

    /// k × the group order ℓ = 2^252 + 27742317777372353535851937790883648493, plus `delta`,
    /// as 32 little-endian bytes (mod 2^256).
    static func multipleOfOrder(_ k: UInt64, plus delta: Int64) -> [UInt8] {
        let order: [UInt64] = [0x5812631a5cf5d3ed, 0x14def9dea2f79cd6, 0, 0x1000000000000000]
        let signExtension: UInt64 = delta < 0 ? .max : 0
        let deltaWords = [UInt64(bitPattern: delta), signExtension, signExtension, signExtension]
        var words = [UInt64](repeating: 0, count: 4)
        var productCarry: UInt64 = 0, sumCarry: UInt64 = 0
        for i in 0..<4 {
            let (high, low) = order[i].multipliedFullWidth(by: k)
            let (product, o1) = low.addingReportingOverflow(productCarry)
            productCarry = high &+ (o1 ? 1 : 0)
            let (partial, o2) = product.addingReportingOverflow(deltaWords[i])
            let (sum, o3) = partial.addingReportingOverflow(sumCarry)
            sumCarry = (o2 ? 1 : 0) + (o3 ? 1 : 0)
            words[i] = sum
        }
        return words.flatMap { w in (0..<8).map { UInt8(truncatingIfNeeded: w >> (8 * $0)) } }
    }

    @Test func edgeSecretsGiveLibsodiumsBytes() throws {
        var secrets: [(String, [UInt8])] = [
            ("all zero", [UInt8](repeating: 0, count: 32)),
            ("all 0xFF", [UInt8](repeating: 0xFF, count: 32)),
            ("1", [1] + [UInt8](repeating: 0, count: 31)),
            ("only the bits clamping clears", [0x07] + [UInt8](repeating: 0, count: 30) + [0x80]),
            ("only the bits clamping clears and bit 254", [0x07] + [UInt8](repeating: 0, count: 30) + [0xC0]),
            ("8: clamps to 2^254 + 8", [8] + [UInt8](repeating: 0, count: 31)),
            ("2^255 − 19", [0xED] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]),
        ]
        // Neighbours of the group order's multiples: clamped, 4ℓ − 4, 5ℓ, … land next to a
        // multiple of ℓ (none is one: a clamped scalar is 8 × something, ℓ is odd, 8ℓ > 2^255).
        for k: UInt64 in 1...8 {
            for delta: Int64 in [-9, -8, -5, -4, -1, 0, 1, 3, 4, 8] {
                secrets.append(("\(k)ℓ \(delta < 0 ? "−" : "+") \(delta.magnitude)", Self.multipleOfOrder(k, plus: delta)))
            }
        }
        #expect(Hex.encode(Self.multipleOfOrder(1, plus: 0)) == "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")
        #expect(Hex.encode(Self.multipleOfOrder(8, plus: -1)) == "679faee7d21893c0b2e6bc17f5cef7a600000000000000000000000000000080")
        for (name, secret) in secrets {
            #expect(secret.count == 32, "\(name)")
            #expect(try Self.ours(secret) == Self.libsodium(secret), "secret \(name)")
        }
    }

    /// The map reads y from libsodium's encoding of the point, which is always reduced below
    /// p (so Field25519's handling of larger encodings is a safeguard, tested on its own).
    @Test func libsodiumsEdwardsEncodingIsCanonical() {
        for _ in 0..<200 {
            var scalar = Sodium.randomBytes(32)
            scalar[0] &= 248
            scalar[31] = scalar[31] & 127 | 64
            var edwards = [UInt8](repeating: 0, count: 32)
            #expect(crypto_scalarmult_ed25519_base_noclamp(&edwards, scalar) == 0)
            edwards[31] &= 0x7F
            #expect(Field25519.isCanonical(edwards))
        }
    }

    @Test func secretOfAnotherLengthIsRefused() {
        #expect(throws: YaOKError.self) { try Self.ours([UInt8](repeating: 1, count: 31)) }
        #expect(throws: YaOKError.self) { try Self.ours([UInt8](repeating: 1, count: 33)) }
    }
}
