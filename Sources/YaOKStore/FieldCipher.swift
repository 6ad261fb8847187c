internal import CSodium
import YaOKSupport
import YaOKWire
import YaOKCrypto

/// Encrypts individual columns (contact names and keys, message bodies, conversation
/// titles) under sub-keys of the random database key, which itself lives only in the vault.
///
/// Each value is XChaCha20-Poly1305 with a fresh random 24-byte nonce, stored as
/// nonce || ciphertext || tag. The associated data names the row (a table label plus the
/// row's natural key), so a value copied into another row, or another column, fails to open.
/// Equality lookups (is this person already a contact?) use a keyed BLAKE2b hash, so the
/// file reveals neither the keys nor which rows belong to a person we might guess.
/// Columns kept in clear for ordering and status are authenticated instead, by a keyed
/// BLAKE2b MAC under a third sub-key (`mac`, Store+Integrity.swift).
package final class FieldCipher: Sendable {
    private let fieldKey: SecureBytes
    private let lookupKey: SecureBytes
    private let integrityKey: SecureBytes

    static let nonceLength = Sodium.aeadNonceLength
    static let tagLength = Sodium.aeadTagLength
    static let lookupLength = 32

    /// Sub-keys are BLAKE2b keyed with the database key over a label: independent keys for
    /// encryption and lookup, so a hash never doubles as a key.
    package init(databaseKey: SecureBytes) throws {
        fieldKey = try FieldCipher.derive(from: databaseKey, label: "YaOK-store-field-v1")
        lookupKey = try FieldCipher.derive(from: databaseKey, label: "YaOK-store-lookup-v1")
        integrityKey = try FieldCipher.derive(from: databaseKey, label: "YaOK-store-integrity-v1")
    }

    static func derive(from key: SecureBytes, label: String) throws -> SecureBytes {
        let out = try SecureBytes(count: 32)
        let input = Array(label.utf8)
        out.withUnsafeMutableBytes { o in
            key.withUnsafeBytes { k in
                _ = crypto_generichash(o.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                                       input, UInt64(input.count),
                                       k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
            }
        }
        return out
    }

    func seal(_ plaintext: [UInt8], ad: [UInt8]) throws -> [UInt8] {
        let nonce = Sodium.randomBytes(FieldCipher.nonceLength)
        return nonce + (try fieldKey.withUnsafeBytes { try Sodium.aeadSeal(plaintext, ad: ad, nonce: nonce, key: $0) })
    }

    /// Throws `corruptStore` when the value was altered, moved to another row, or sealed
    /// under another database key.
    func open(_ sealed: [UInt8], ad: [UInt8]) throws -> [UInt8] {
        guard sealed.count >= FieldCipher.nonceLength + FieldCipher.tagLength else { throw FieldCipher.failure }
        let nonce = Array(sealed[0..<FieldCipher.nonceLength])
        guard let out = fieldKey.withUnsafeBytes({
            Sodium.aeadOpen(sealed[FieldCipher.nonceLength...], ad: ad, nonce: nonce, key: $0)
        }) else { throw FieldCipher.failure }
        return out
    }

    /// Like `seal`, after padding to the envelope's size buckets (64, 128, … 16384 bytes, and
    /// 32768 for a repaired received text of up to 30,720 bytes), so that the file does not
    /// tell a one-word message from a long one. For message bodies.
    func sealPadded(_ plaintext: [UInt8], ad: [UInt8]) throws -> [UInt8] {
        var padded = try Padding.pad(plaintext, buckets: Padding.storeBuckets)
        defer { Sodium.wipe(&padded) }
        return try seal(padded, ad: ad)
    }

    /// Opens a `sealPadded` value as UTF-8 text.
    func openPaddedString(_ sealed: [UInt8], ad: [UInt8]) throws -> String {
        var padded = try open(sealed, ad: ad)
        defer { Sodium.wipe(&padded) }
        guard let body = Padding.unpad(padded[...], buckets: Padding.storeBuckets),
              let s = String(validating: body, as: UTF8.self) else { throw FieldCipher.failure }
        return s
    }

    func openString(_ sealed: [UInt8], ad: [UInt8]) throws -> String {
        var bytes = try open(sealed, ad: ad)
        defer { Sodium.wipe(&bytes) }
        guard let s = String(validating: bytes, as: UTF8.self) else { throw FieldCipher.failure }
        return s
    }

    /// Keyed BLAKE2b-256 of `input`: equal inputs give equal lookups under one store only.
    package func lookup(_ input: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: FieldCipher.lookupLength)
        lookupKey.withUnsafeBytes { k in
            _ = crypto_generichash(&out, out.count, input, UInt64(input.count),
                                   k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
        }
        return out
    }

    static let macLength = 32

    /// Keyed BLAKE2b-256 (the integrity sub-key) of a row's identity and clear columns.
    func mac(_ input: RowMAC) -> [UInt8] {
        integrityKey.withUnsafeBytes { key in
            input.bytes.withUnsafeBytes { Sodium.blake2b(parts: [$0], key: key, outputLength: FieldCipher.macLength) }
        }
    }

    /// Whether `stored` is the MAC of `input` (constant time). A missing MAC never is.
    func verify(_ stored: [UInt8]?, _ input: RowMAC) -> Bool {
        guard let stored else { return false }
        return Sodium.constantTimeEqual(stored, mac(input))
    }

    static let failure = YaOKError(.corruptStore, "The data store is corrupt: a stored record failed authentication")
}

/// Associated data for each encrypted column: a label and the row's natural key.
enum RowAD {
    // A contact's name and keys and its conversation's title bind both the person (lookup
    // hash) and the row id that the conversation's messages bind, so that whole rows swapped
    // between two people (Alice's history shown under Bob's name) fail to open.
    static func contactName(_ lookup: [UInt8], id: Int64) -> [UInt8] {
        Array("YaOK-contact-name-v2".utf8) + lookup + bigEndian(UInt64(bitPattern: id))
    }
    static func contactKeys(_ lookup: [UInt8], id: Int64) -> [UInt8] {
        Array("YaOK-contact-keys-v2".utf8) + lookup + bigEndian(UInt64(bitPattern: id))
    }
    static func contactCard(_ lookup: [UInt8], id: Int64) -> [UInt8] {
        Array("YaOK-contact-card-v1".utf8) + lookup + bigEndian(UInt64(bitPattern: id))
    }
    static func conversationTitle(_ lookup: [UInt8], id: Int64) -> [UInt8] {
        Array("YaOK-conversation-title-v2".utf8) + lookup + bigEndian(UInt64(bitPattern: id))
    }
    static let linkKey = Array("YaOK-link-key-v1".utf8)
    static let linkCertificate = Array("YaOK-link-certificate-v1".utf8)
    static func relayPseudonym(_ relay: String) -> [UInt8] { Array("YaOK-relay-pseudonym-v1".utf8) + Array(relay.utf8) }
    /// A repaired received text (`Message.repaired`) is sealed under its own label, so the
    /// flag is authenticated with the text and needs no clear column: rows written before
    /// the flag existed open under the first label, as not repaired.
    static func messageBody(conversation: Int64, messageID: [UInt8], direction: Int, repaired: Bool = false) -> [UInt8] {
        Array((repaired ? "YaOK-message-body-repaired-v1" : "YaOK-message-body-v1").utf8)
            + bigEndian(UInt64(bitPattern: conversation)) + messageID + [UInt8(direction & 0xff)]
    }

    static func bigEndian(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.bigEndian, Array.init) }
}

/// What a row MAC covers: a label naming the table and format, then the row's identity and
/// its clear columns, each in a fixed or length-prefixed encoding so that no two rows give
/// the same input.
struct RowMAC {
    private(set) var bytes: [UInt8]

    /// `capacity`: about how many bytes the fields after the label take, so that the input
    /// is built in one allocation (rows are MACed at every read and write: an array per
    /// field and its regrowth were a tenth of the allocations of a message's round trip).
    init(_ label: String, capacity: Int = 96) {
        bytes = []
        bytes.reserveCapacity(8 + label.utf8.count + capacity)
        int(Int64(label.utf8.count))
        bytes.append(contentsOf: label.utf8)
    }

    mutating func int(_ value: Int64) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
    mutating func int(_ value: Int) { int(Int64(value)) }
    mutating func optional(_ value: Int64?) {
        if let value { bytes.append(1); int(value) } else { bytes.append(0) }
    }
    mutating func blob(_ value: [UInt8]) {
        int(Int64(value.count))
        bytes += value
    }
    mutating func text(_ value: String) {
        int(Int64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    /// contacts: the row id, the person's lookup hash, verified, added time. (The name and
    /// keys are AEAD-bound to the same id and lookup; last_seen_ms and last_transport are
    /// written while locked and stay unauthenticated.)
    static func contact(id: Int64, lookup: [UInt8], verified: Bool, addedAt: Int64) -> RowMAC {
        var m = RowMAC("YaOK-row-contact-v1")
        m.int(id); m.blob(lookup); m.int(verified ? 1 : 0); m.int(addedAt)
        return m
    }

    /// messages: the natural key the body is bound to, then status, times and unread.
    static func message(conversation: Int64, messageID: [UInt8], direction: Int, status: Int, senderTimestamp: Int64,
                        createdAt: Int64, sentAt: Int64?, receivedAt: Int64?, unread: Bool) -> RowMAC {
        var m = RowMAC("YaOK-row-message-v1")
        m.int(conversation); m.blob(messageID); m.int(direction); m.int(status); m.int(senderTimestamp)
        m.int(createdAt); m.optional(sentAt); m.optional(receivedAt); m.int(unread ? 1 : 0)
        return m
    }

    /// outbox: what a row is and where it goes (packet ID, kind, recipient, expiry, the
    /// packet). Not its scheduling (state, attempts, next attempt), which changes while
    /// the node is locked.
    static func outbox(packetID: [UInt8], kind: Int, contactID: Int64, expiresAt: Int64, packet: [UInt8]) -> RowMAC {
        var m = RowMAC("YaOK-row-outbox-v1", capacity: 48 + packetID.count + packet.count)
        m.blob(packetID); m.int(kind); m.int(contactID); m.int(expiresAt); m.blob(packet)
        return m
    }

    /// A security event's chain value, sealed once the database key is at hand.
    static func securityEvent(chain: [UInt8]) -> RowMAC {
        var m = RowMAC("YaOK-security-event-v1")
        m.blob(chain)
        return m
    }

    /// The log's seal: its last event and that event's chain value.
    static func logSeal(lastID: Int64, head: [UInt8]) -> RowMAC {
        var m = RowMAC("YaOK-security-log-seal-v1")
        m.int(lastID); m.blob(head)
        return m
    }
}
