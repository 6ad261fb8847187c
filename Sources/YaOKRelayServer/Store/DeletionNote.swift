import YaOKCrypto
import YaOKWire

/// What a relay remembers of a packet its recipient deleted, until the packet would have
/// expired (docs/PROTOCOL.md §8.5): a keyed hash of the mailbox ID and the packet's bytes,
/// never the mailbox or message ID. The key is random, made once per database
/// (`relay_secret`), so the notes cannot be matched against packets seen at another relay.
///
/// A POST whose (mailbox, bytes) match a note is answered ACCEPTED and not stored again:
/// the recipient has those very bytes (its duplicate filter would drop them). A packet
/// re-sealed under the same message ID (other bytes) does not match: it is stored and
/// delivered, and the recipient acknowledges it again (§4.8), which is how a sender whose
/// ack was lost gets one.
enum DeletionNote {
    static let length = 16

    static func of(mailbox: MailboxID, packet: [UInt8], key: [UInt8]) -> [UInt8] {
        Sodium.blake2b([mailbox.bytes[...], packet[...]], key: key, outputLength: length)
    }
}

/// Who posted a stored packet, as the store keeps it (docs/PROTOCOL.md §8.5): a keyed hash
/// of the poster's pseudonym under the same per-database key (with its own label), never
/// the pseudonym. `yaok-relay revoke` deletes what the revoked pseudonym stored by it.
enum PosterTag {
    static let label = Array("YaOK-relay-poster-v1".utf8)

    static func of(_ pseudonym: [UInt8], key: [UInt8]) -> [UInt8] {
        Sodium.blake2b([label[...], pseudonym[...]], key: key, outputLength: DeletionNote.length)
    }
}
