import YaOKSupport
import YaOKCrypto

/// How many messages each contact was sent sealed to its long-term key because it had
/// announced no receiver key (docs/PROTOCOL.md §13.5; migration 15). Kept in the store, not
/// in memory, so that the fallback stays visible across restarts and to `yaok status` run
/// as a separate process. Sealed by the field cipher like the rest of the forward-secrecy
/// state (a count that could be rewritten in the file would be no warning); deleted with
/// the contact, gone with a reset.
extension Store {
    /// The count for `contactID` (0 when none was recorded).
    package func longTermSeals(contactID: Int64, cipher: FieldCipher) throws -> UInt64 {
        let rows = try db.rows("SELECT sealed FROM long_term_seals WHERE contact_id = ?", [.int(contactID)]) { $0.blob(0) }
        guard let sealed = rows.first else { return 0 }
        let plain = try cipher.open(sealed, ad: RowAD.longTermSeals(contactID: contactID))
        guard plain.count == 8 else { throw FieldCipher.failure }
        return UInt64(bigEndianBytes: plain[...])
    }

    /// Adds one to the count for `contactID`.
    package func countLongTermSeal(contactID: Int64, cipher: FieldCipher) throws {
        try db.transaction {
            let count = try longTermSeals(contactID: contactID, cipher: cipher)
            let sealed = try cipher.seal((count &+ 1).bigEndianBytes, ad: RowAD.longTermSeals(contactID: contactID))
            try db.query("INSERT OR REPLACE INTO long_term_seals (contact_id, sealed) VALUES (?, ?)",
                         [.int(contactID), .blob(sealed)])
        }
    }
}

extension RowAD {
    static func longTermSeals(contactID: Int64) -> [UInt8] {
        Array("YaOK-long-term-seals-v1".utf8) + bigEndian(UInt64(bitPattern: contactID))
    }
}
