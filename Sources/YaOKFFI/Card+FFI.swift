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
    boundary {
        let card = try Handles.borrow(card, as: CardHandle.self, "card").card
        try give(try formatFingerprint(card.fingerprint, format), to: try required(out, "out"))
    }
}

@c @implementation
public func yaok_card_text(_ card: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    handleString(card, CardHandle.self, "card", out) { $0.card.text }
}

@c @implementation
public func yaok_card_public_keys(_ card: OpaquePointer?, _ outEncryptionKey: UnsafeMutablePointer<UInt8>?,
                                  _ outSigningKey: UnsafeMutablePointer<UInt8>?) -> Int32 {
    boundary {
        let keys = try Handles.borrow(card, as: CardHandle.self, "card").card.publicIdentity
        let enc = try required(outEncryptionKey, "out_encryption_key")
        let sign = try required(outSigningKey, "out_signing_key")
        enc.update(from: keys.encryptionKey, count: 32)
        sign.update(from: keys.signingKey, count: 32)
    }
}
