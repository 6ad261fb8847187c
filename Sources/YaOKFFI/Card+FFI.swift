import CYaOK
import YaOK

/* ---- contact cards ---- */

final class CardHandle: Handle {
    let card: ContactCard
    init(_ card: ContactCard) { self.card = card }
}

@c @implementation
public func yaok_card_decode(_ text: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    newHandle(out) { CardHandle(try ContactCard(text: try cardText(text, "text"))) }
}

@c @implementation
public func yaok_card_free(_ card: OpaquePointer?) { Handles.release(card, as: CardHandle.self) }

@c @implementation
public func yaok_card_name(_ card: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    handleString(card, CardHandle.self, "card", out) { $0.card.name }
}

@c @implementation
public func yaok_card_user_id(_ card: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    handleString(card, CardHandle.self, "card", out) { $0.card.userID }
}

@c @implementation
public func yaok_card_fingerprint(_ card: OpaquePointer?, _ format: UInt32,
                                  _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    stringOut({ try formatFingerprint(try Handles.borrow(card, as: CardHandle.self, "card").card.fingerprint, format) }, out, "out")
}

@c @implementation
public func yaok_card_text(_ card: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    handleString(card, CardHandle.self, "card", out) { $0.card.text }
}

@c @implementation
public func yaok_card_public_keys(_ card: OpaquePointer?, _ outEncryptionKey: UnsafeMutablePointer<UInt8>?,
                                  _ outSigningKey: UnsafeMutablePointer<UInt8>?) -> Int32 {
    fillEach({ try Handles.borrow(card, as: CardHandle.self, "card").card.publicIdentity }, (outEncryptionKey, "out_encryption_key"),
             (outSigningKey, "out_signing_key")) { keys, enc, sign in keys.copyKeys(to: enc, sign) }
}

extension PublicIdentity {
    /// Both public keys (YAOK_PUBLIC_KEY_BYTES each) into the caller's buffers.
    func copyKeys(to encryption: UnsafeMutablePointer<UInt8>, _ signing: UnsafeMutablePointer<UInt8>) {
        encryption.update(from: encryptionKey, count: Int(YAOK_PUBLIC_KEY_BYTES))
        signing.update(from: signingKey, count: Int(YAOK_PUBLIC_KEY_BYTES))
    }
}
