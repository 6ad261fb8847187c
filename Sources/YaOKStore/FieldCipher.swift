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
package final class FieldCipher: Sendable {
    private let fieldKey: SecureBytes
    private let lookupKey: SecureBytes

    static let nonceLength = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagLength = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
    static let lookupLength = 32

    /// Sub-keys are BLAKE2b keyed with the database key over a label: independent keys for
    /// encryption and lookup, so a hash never doubles as a key.
    package init(databaseKey: SecureBytes) throws {
        fieldKey = try FieldCipher.derive(from: databaseKey, label: "YaOK-store-field-v1")
        lookupKey = try FieldCipher.derive(from: databaseKey, label: "YaOK-store-lookup-v1")
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

    func seal(_ plaintext: [UInt8], ad: [UInt8]) -> [UInt8] {
        var out = Sodium.randomBytes(FieldCipher.nonceLength)
        out += [UInt8](repeating: 0, count: plaintext.count + FieldCipher.tagLength)
        fieldKey.withUnsafeBytes { k in
            out.withUnsafeMutableBufferPointer { o in
                let nonce = UnsafePointer(o.baseAddress!)
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    o.baseAddress! + FieldCipher.nonceLength, nil, plaintext, UInt64(plaintext.count),
                    ad, UInt64(ad.count), nil, nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return out
    }

    /// Throws `corruptStore` when the value was altered, moved to another row, or sealed
    /// under another database key.
    func open(_ sealed: [UInt8], ad: [UInt8]) throws -> [UInt8] {
        guard sealed.count >= FieldCipher.nonceLength + FieldCipher.tagLength else { throw FieldCipher.failure }
        var out = [UInt8](repeating: 0, count: sealed.count - FieldCipher.nonceLength - FieldCipher.tagLength)
        let rc = fieldKey.withUnsafeBytes { k in
            sealed.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer { o in
                    crypto_aead_xchacha20poly1305_ietf_decrypt(
                        o.baseAddress, nil, nil, s.baseAddress! + FieldCipher.nonceLength,
                        UInt64(s.count - FieldCipher.nonceLength), ad, UInt64(ad.count),
                        s.baseAddress!, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard rc == 0 else { throw FieldCipher.failure }
        return out
    }

    /// Like `seal`, after padding to the envelope's size buckets (64, 128, … 16384 bytes), so
    /// that the file does not tell a one-word message from a long one. For message bodies.
    func sealPadded(_ plaintext: [UInt8], ad: [UInt8]) throws -> [UInt8] {
        var padded = try Padding.pad(plaintext)
        defer { Sodium.wipe(&padded) }
        return seal(padded, ad: ad)
    }

    /// Opens a `sealPadded` value as UTF-8 text.
    func openPaddedString(_ sealed: [UInt8], ad: [UInt8]) throws -> String {
        var padded = try open(sealed, ad: ad)
        defer { Sodium.wipe(&padded) }
        guard let body = Padding.unpad(padded[...]),
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
    static func messageBody(conversation: Int64, messageID: [UInt8], direction: Int) -> [UInt8] {
        Array("YaOK-message-body-v1".utf8) + bigEndian(UInt64(bitPattern: conversation)) + messageID + [UInt8(direction & 0xff)]
    }

    static func bigEndian(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * $0)) } }
}
