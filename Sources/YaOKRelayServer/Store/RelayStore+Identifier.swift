import YaOKSupport
import YaOKWire
import YaOKStore
import YaOKCrypto

/// The relay identifier (docs/PROTOCOL.md §8.2): 16 random bytes made the first time a relay
/// runs over a store, stated in every CHALLENGE, and mixed into every mailbox ID by the
/// clients. It lives in the store, not in the configuration, so every relay of a cluster
/// (one PostgreSQL database) states the same one, and a relay restarted over its data keeps
/// its mailboxes.
///
/// Kept in a one-row table of its own, created when first needed (`CREATE TABLE IF NOT
/// EXISTS`, then an insert that loses to any row already there): concurrent relays of a
/// cluster starting together all read the one row that won.
enum RelayIdentifier {
    static func fresh() -> [UInt8] {
        Sodium.randomBytes(RelayFrame.relayIdentifierLength)
    }

    static func checked(_ bytes: [UInt8]) throws -> [UInt8] {
        guard bytes.count == RelayFrame.relayIdentifierLength else {
            throw YaOKError(.storage, "The stored relay identifier has \(bytes.count) bytes, not \(RelayFrame.relayIdentifierLength)")
        }
        return bytes
    }
}

extension SQLiteRelayStore {
    public func relayIdentifier() throws -> [UInt8] {
        try db.transaction {
            try db.execute("CREATE TABLE IF NOT EXISTS relay_identity (one INTEGER PRIMARY KEY CHECK (one = 1), id BLOB NOT NULL)")
            try db.query("INSERT OR IGNORE INTO relay_identity (one, id) VALUES (1, ?)", [.blob(RelayIdentifier.fresh())])
            var id: [UInt8] = []
            try db.query("SELECT id FROM relay_identity WHERE one = 1") { id = $0.blob(0) }
            return try RelayIdentifier.checked(id)
        }
    }
}

extension PostgresRelayStore {
    public func relayIdentifier() throws -> [UInt8] {
        try pool.withConnection { c in
            // Two relays creating the table at the same moment: one may fail on PostgreSQL's
            // catalog; the table is there either way, and the insert below says if it is not.
            try? c.execute("CREATE TABLE IF NOT EXISTS relay_identity (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), id BYTEA NOT NULL)")
            try c.query("relay_identity_insert", "INSERT INTO relay_identity (one, id) VALUES (TRUE, $1) ON CONFLICT (one) DO NOTHING",
                        types: [PostgresType.bytea], [.bytes(RelayIdentifier.fresh())])
            let rows = try c.query("relay_identity", "SELECT id FROM relay_identity", types: [], [])
            guard rows.count == 1 else { throw YaOKError(.storage, "The relay identifier is missing from the database") }
            return try RelayIdentifier.checked(rows.bytes(0, 0))
        }
    }
}
