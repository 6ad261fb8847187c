/// The hash a range fingerprint ends with (docs/PROTOCOL.md, "Reconciliation"). YaOKWire
/// is pure Swift (the fuzzer builds it alone), so the cryptographic hash — BLAKE2b through
/// libsodium — lives in YaOKCrypto (`ReconciliationBLAKE2b`) and comes in through this
/// protocol. Pure Swift (fuzz build).
public protocol ReconciliationHash: Sendable {
    /// `ReconciliationMessage.fingerprintLength` bytes of a hash of `input` (the range's
    /// id sum, then its item count).
    func fingerprint(_ input: [UInt8]) -> [UInt8]
}
