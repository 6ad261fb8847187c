import Glibc

/// The texts of outgoing messages this store inserted while unlocked, each with the sealed
/// body and the associated data it was sealed to (issue 20). A sent message's row is read
/// back up to three times — its move to `sent`, its recipient's ack, its own carried copy —
/// and opening its body each time (up to 16 KiB decrypted, unpadded and checked as UTF-8)
/// was about a sixth of the sender's instructions for 10 KB messages (`yaok-bench bulk`).
///
/// A read takes the text from here only when the row's stored body and the AD its row
/// gives are byte for byte what was sealed, under the same cipher: opening is a function
/// of those, so the text is the one opening would give. A body altered or copied from
/// another row in the file (other bytes, or another row's AD) misses, is opened, and is
/// refused as before.
///
/// Plaintext kept in memory, so: only while the node is unlocked (`Store.detach` empties
/// it, as it does the key rings), when the database key that opens every body is in
/// memory too; an entry leaves when its message is delivered, and all of them when a
/// contact's messages are deleted or a transaction (or savepoint) rolls back; at most `byteBudget` bytes and `capacity` entries
/// (past either a text is not kept, and its reads open the body as before).
final class SentTextCache {
    /// About 300 messages of 10 KB (sealed body and text): a batch of 200 fits.
    static let byteBudget = 8 << 20
    static let capacity = 4096

    private struct Entry {
        let ad: [UInt8]
        let sealed: [UInt8]
        let text: String
        let cipher: FieldCipher
        var bytes: Int { sealed.count + text.utf8.count + ad.count }
    }

    private var entries: [[UInt8]: Entry] = [:]
    private var bytes = 0

    var count: Int { entries.count }

    /// Keeps the text of the message `messageID` whose body was sealed as `sealed` to `ad`
    /// under `cipher`, if it fits.
    func keep(_ text: String, messageID: [UInt8], sealed: [UInt8], ad: [UInt8], cipher: FieldCipher) {
        let entry = Entry(ad: ad, sealed: sealed, text: text, cipher: cipher)
        remove(messageID)
        guard entries.count < Self.capacity, bytes + entry.bytes <= Self.byteBudget else { return }
        entries[messageID] = entry
        bytes += entry.bytes
    }

    /// The text kept for `messageID` if `stored` (the row's body) and `ad` are exactly what
    /// was sealed under `cipher`; nil otherwise (the caller opens the body).
    func text(_ messageID: [UInt8], stored: UnsafeRawBufferPointer, ad: [UInt8], cipher: FieldCipher) -> String? {
        guard let entry = entries[messageID], entry.cipher === cipher, entry.ad == ad,
              entry.sealed.count == stored.count, let theirs = stored.baseAddress,
              entry.sealed.withUnsafeBytes({ ours in ours.baseAddress.map { memcmp($0, theirs, stored.count) == 0 } ?? false }) else { return nil }
        return entry.text
    }

    func remove(_ messageID: [UInt8]) {
        guard let old = entries.removeValue(forKey: messageID) else { return }
        bytes -= old.bytes
    }

    func removeAll() {
        entries.removeAll()
        bytes = 0
    }
}
