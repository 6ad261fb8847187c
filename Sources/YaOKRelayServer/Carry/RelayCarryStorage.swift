import YaOKSupport
import YaOKStore

/// Where a relay keeps carried packets (docs/RELAY.md, "Carrying"), handed to
/// `RelayServer` at start; nil there: the relay does not carry (a CARRY frame is then
/// answered with nothing, as an `off` node ignores meetings).
public final class RelayCarryStorage: @unchecked Sendable {
    let store: RelayCarryStore

    init(_ store: RelayCarryStore) { self.store = store }

    /// A SQLite database of the node's carry schema in `directory/carry` (the relay's data
    /// directory): created on first use, 0600.
    public static func sqlite(directory: String) throws -> RelayCarryStorage {
        RelayCarryStorage(try SQLiteRelayCarryStore(directory: directory + "/carry"))
    }
}

extension RelayCarryStorage {
    /// The carry tables of the relay schema in the PostgreSQL database at `conninfo`
    /// (migrated on open): every relay of a cluster carries from one store.
    public static func postgres(conninfo: String) throws -> RelayCarryStorage {
        RelayCarryStorage(try PostgresRelayCarryStore(conninfo: conninfo))
    }
}
