import YaOKWire

/// The fingerprint hash of reconciliation (docs/PROTOCOL.md, "Reconciliation"): keyed
/// BLAKE2b-128 through libsodium's crypto_generichash, the key a fixed label that keeps it
/// apart from every other BLAKE2b use in the protocol. YaOKWire holds the algorithm and
/// calls this through `ReconciliationHash`, because it must stay free of C modules.
public struct ReconciliationBLAKE2b: ReconciliationHash {
    public static let key = Array("YaOK-reconcile-v1".utf8)

    public init() {}

    public func fingerprint(_ input: [UInt8]) -> [UInt8] {
        Sodium.blake2b(input, key: Self.key, outputLength: ReconciliationMessage.fingerprintLength)
    }
}
