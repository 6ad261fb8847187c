import YaOKSupport
import YaOKCrypto

/// Relay pseudonyms (docs/PROTOCOL.md §8.2): the relay-only key a node logs in with, one
/// per relay address, so two relays cannot link their clients by key.
extension Store {
    /// The pseudonym for `relay` ("host:port"), made and saved the first time.
    package func relayPseudonym(_ relay: String, cipher: FieldCipher) throws -> SigningKey {
        let ad = RowAD.relayPseudonym(relay)
        if let sealed = try db.rows("SELECT sealed_seed FROM relay_accounts WHERE relay = ?", [.text(relay)], map: { try $0.blob(0) }).first {
            var seed = try cipher.open(sealed, ad: ad)
            defer { Sodium.wipe(&seed) }
            return try SigningKey(seed: SecureBytes(copying: seed))
        }
        let key = try SigningKey.random()
        try key.seed().withUnsafeBytes { seed in
            var bytes = Array(seed)
            defer { Sodium.wipe(&bytes) }
            try db.query("INSERT INTO relay_accounts (relay, sealed_seed) VALUES (?, ?)",
                         [.text(relay), .blob(try cipher.seal(bytes, ad: ad))])
        }
        return key
    }
}
