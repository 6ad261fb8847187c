import Glibc
import YaOKCrypto
import YaOKStore
import YaOKSupport

/// The key of the address and /24 tags (`HolderTag`), kept in a file of the data directory
/// (`relay-address.key`, 0600, 32 random bytes made at the first start), never in the
/// database. An IPv4 address has only 32 bits: with the key, every tag of a copy of the
/// database is reversed in minutes (docs/RELAY.md, "What is stored"). Outside the
/// database, a copy of the database alone (a dump, a replica, a backup of the file)
/// does not name the posters. The relays of a PostgreSQL cluster share the quotas only
/// if they share this file, as they share the certificate.
enum AddressKey {
    static let fileName = "relay-address.key"
    static let length = 32

    /// Reads the key in `directory`, making it first if there is none. Two relays starting
    /// together over one directory read the same key: it is written whole under another
    /// name and linked into place, so no one reads half of it.
    static func load(directory: String) throws -> [UInt8] {
        try Store.makeDirectory(directory)
        let path = directory + "/" + fileName
        if access(path, F_OK) != 0 {
            let temporary = path + ".\(getpid()).\(Hex.encode(Sodium.randomBytes(4)))"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw failure("Cannot create \(temporary)") }
            let key = Sodium.randomBytes(length)
            let written = key.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd)
            close(fd)
            defer { unlink(temporary) }
            guard written == length, synced == 0 else { throw failure("Cannot write \(temporary)") }
            guard link(temporary, path) == 0 || errno == EEXIST else { throw failure("Cannot create \(path)") }
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw failure("Cannot open \(path)") }
        defer { close(fd) }
        var key = [UInt8](repeating: 0, count: length + 1)
        let n = key.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n == length else {
            throw YaOKError(.storage, "\(path) is damaged: it must hold exactly \(length) bytes (delete it to make a new key; "
                            + "the stored-byte quotas then start again from zero)")
        }
        return Array(key.prefix(length))
    }

    private static func failure(_ what: String) -> YaOKError {
        YaOKError(errno == ENOSPC ? .diskFull : .storage, "\(what): \(String(cString: strerror(errno)))")
    }
}
