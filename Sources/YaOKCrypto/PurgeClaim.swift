import YaOKSupport
import YaOKWire

/// The purge claim of a carried packet (docs/PROTOCOL.md §10.6): 16 random bytes, fresh per
/// packet, sealed inside; outside, only `claim_hash = BLAKE2b-128(key = "YaOK-claim-v1"; claim)`.
/// Publishing the claim proves knowledge of the sealed content (only the recipient who
/// opened it, or the sender who made it, has it), and tells a carrier nothing about who
/// either is: the claim is random and names nobody.
public enum PurgeClaim {
    static let hashKey = Array("YaOK-claim-v1".utf8)

    public static func random() -> [UInt8] { Sodium.randomBytes(PurgeRecord.claimLength) }

    public static func hash(_ claim: [UInt8]) -> [UInt8] {
        Sodium.blake2b(claim, key: hashKey, outputLength: CarriedPacket.claimHashLength)
    }

    /// Whether `claim` purges `packet`: its hash equals the packet's claim hash (constant time).
    public static func purges(_ claim: [UInt8], _ packet: CarriedPacket) -> Bool {
        claim.count == PurgeRecord.claimLength && Sodium.constantTimeEqual(hash(claim), packet.claimHash)
    }
}
