import Testing
@testable import YaOKSupport
@testable import YaOKCrypto

/// Card version 2 (docs/PROTOCOL.md §2, §13.4): version 1's fields plus a prekey, signed
/// under "YaOK-card-v2". Readers take both versions; every defect of the prekey part is
/// `invalidCard`, never a card with a prekey nobody signed.
@Suite struct PrekeyCardTests {
    let alice: Identity
    let prekey: ReceiverKeyPair

    init() throws {
        alice = try Identity(name: "Alice")
        prekey = try ReceiverKeyPair.generate(id: ReceiverKey.prekeyID(day: 20_000))
    }

    func vectorIdentity(_ name: String) throws -> Identity {
        let v = try #require(try ProtocolVector.named(name).first)
        return try Identity(name: try v.string("display_name"), secrets: try SecureBytes(copying: try v.hex("secrets")))
    }

    @Test func vector() throws {
        let v = try #require(try ProtocolVector.named("card-alice-v2").first)
        let owner = try vectorIdentity(try v.string("identity"))
        let day = try v.int64("prekey_day")
        let id = ReceiverKey.prekeyID(day: day)
        #expect(Int64(id) == (try v.int64("prekey_key_id")) && ReceiverKey.prekeyDay(id: id) == day)
        let pair = try ReceiverKeyPair(id: id, secret: try SecureBytes(copying: try v.hex("prekey_secret")))
        #expect(pair.key.publicKey == (try v.hex("prekey_public")))
        let card = owner.card(prekey: pair.key)
        #expect(card.text == (try v.string("text")))
        let decoded = try ContactCard(text: try v.string("text"))
        #expect(decoded.version == 2 && decoded.prekey == pair.key && decoded.publicIdentity == owner.publicIdentity)
        #expect(decoded.keyProof == (try v.hex("key_proof")))
        // The version 1 vector still holds beside it (the same key proof).
        let v1 = try #require(try ProtocolVector.named("card-alice").first)
        #expect(owner.card.text == (try v1.string("text")))
    }

    @Test func roundTripAndSizes() throws {
        let v2 = alice.card(prekey: prekey.key)
        #expect(v2.text.hasPrefix("yaok:2:") && v2.payload.count == alice.card.payload.count + 36)
        let back = try ContactCard(text: v2.text)
        #expect(back == v2 && back.prekey == prekey.key && back.name == "Alice")
        let v1 = try ContactCard(text: alice.card.text)
        #expect(v1.version == 1 && v1.prekey == nil)
    }

    /// Each byte of the prekey, changed, fails the signature; a prekey ID without the top
    /// bit, or a low-order prekey, is refused even when validly signed.
    @Test func aTamperedPrekeyIsRefused() throws {
        let payload = alice.card(prekey: prekey.key).payload
        let start = 67 + 5  // after "Alice"
        for offset in start..<(start + 36) {
            var bad = payload
            bad[offset] ^= 0x01
            #expect(throws: YaOKError(.invalidCard)) { try ContactCard(text: "yaok:2:" + Base64URL.encode(bad)) }
        }
        let notPrekey = try ReceiverKey(id: 20_000, publicKey: prekey.key.publicKey)
        #expect(message(alice.card(prekey: notPrekey).text).hasSuffix("its prekey is not valid"))
        let lowOrder = try ReceiverKey(id: prekey.key.id, publicKey: [1] + [UInt8](repeating: 0, count: 31))
        #expect(message(alice.card(prekey: lowOrder).text).hasSuffix("its prekey is not valid"))
    }

    /// A version 2 payload signed under version 1's domain string (or the reverse), a
    /// version byte that is not the prefix's, and a cut or extended payload are refused.
    @Test func wrongSignatureVersionMismatchAndTruncation() throws {
        let v2 = alice.card(prekey: prekey.key).payload
        let signed = Array(v2.dropLast(64))
        let underV1 = signed + alice.sign(ContactCard.signatureContext + signed)
        #expect(message("yaok:2:" + Base64URL.encode(underV1)).contains("bad signature"))
        let v1 = alice.card.payload
        let v1signed = Array(v1.dropLast(64))
        let v1UnderV2 = v1signed + alice.sign(ContactCard.signatureContextV2 + v1signed)
        #expect(message("yaok:1:" + Base64URL.encode(v1UnderV2)).contains("bad signature"))
        #expect(message("yaok:1:" + Base64URL.encode(v2)).contains("damaged"))
        #expect(message("yaok:2:" + Base64URL.encode(v1)).contains("damaged"))
        for cut in [1, 36, 64, 100] {
            #expect(message("yaok:2:" + Base64URL.encode(Array(v2.dropLast(cut)))).contains("damaged"))
        }
        #expect(message("yaok:2:" + Base64URL.encode(v2 + [0])).contains("damaged"))
        #expect(message("yaok:3:" + Base64URL.encode(v2)).hasPrefix("Invalid Ya OK QR code: unsupported card version 3"))
    }

    @Test func prekeyDaysAndWindows() throws {
        let day: Int64 = 86_400_000
        let key = prekey.key  // day 20000
        #expect(ReceiverKey.utcDay(ms: 20_000 * day) == 20_000 && ReceiverKey.utcDay(ms: 20_001 * day - 1) == 20_000)
        #expect(Prekey.isFresh(key, nowMs: 20_008 * day - 1))    // day 20007 = D + 7
        #expect(!Prekey.isFresh(key, nowMs: 20_008 * day))       // day D + 8
        #expect(!Prekey.isExpired(id: key.id, nowMs: 20_023 * day - 1))
        #expect(Prekey.isExpired(id: key.id, nowMs: 20_023 * day))
        #expect(Prekey.exposureEndMs(key) == 20_023 * day)
        // Dated more than a day ahead of the sender's clock: not used (falls back visibly).
        #expect(Prekey.isFresh(key, nowMs: 19_999 * day))
        #expect(!Prekey.isFresh(key, nowMs: 19_999 * day - 1))
    }

    /// A ring takes a card's prekey only while the contact announced nothing newer; a later
    /// prekey replaces an earlier one, a usable one replaces one dated ahead, and one dated
    /// ahead never replaces a usable one.
    @Test func whichPrekeyTheRingKeeps() throws {
        let day: Int64 = 86_400_000, now = 20_000 * day
        func prekey(_ d: Int64) throws -> ReceiverKey { try ReceiverKeyPair.generate(id: ReceiverKey.prekeyID(day: d)).key }
        var ring = ReceiverKeyRing()
        let today = try prekey(20_000), yesterday = try prekey(19_999), ahead = try prekey(20_400)
        #expect(ring.learnPrekey(yesterday, nowMs: now) && ring.peerKey == yesterday)
        #expect(ring.learnPrekey(today, nowMs: now) && ring.peerKey == today)
        #expect(!ring.learnPrekey(yesterday, nowMs: now) && !ring.learnPrekey(today, nowMs: now))
        // Newer but dated ahead (a wrong clock): it does not displace the usable one.
        #expect(!ring.learnPrekey(ahead, nowMs: now) && ring.sealingKey(nowMs: now) == today)
        // Held while unusable, it gives way to a usable one, older or newer.
        var aheadRing = ReceiverKeyRing()
        #expect(aheadRing.learnPrekey(ahead, nowMs: now) && aheadRing.sealingKey(nowMs: now) == nil)
        #expect(aheadRing.learnPrekey(yesterday, nowMs: now) && aheadRing.sealingKey(nowMs: now) == yesterday)
        #expect(ring.learnPrekey(try prekey(20_001), nowMs: now) && ring.sealingKey(nowMs: now) != nil)
        try ring.opened(with: today.id, announced: Announcement(key: try ReceiverKey(id: 1, publicKey: today.publicKey), release: 0),
                        nowMs: now)
        #expect(!ring.learnPrekey(try prekey(20_002), nowMs: now) && ring.peerKey?.id == 1)
    }

    func message(_ text: String) -> String {
        do { _ = try ContactCard(text: text); return "" } catch { return (error as? YaOKError)?.message ?? "" }
    }
}
