import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct ContactCardTests {
    let alice = try! Identity(name: "Alice 🔒")

    @Test func roundTrip() throws {
        let card = try ContactCard(text: alice.card.text)
        #expect(card.name == "Alice 🔒")
        #expect(card.publicIdentity == alice.publicIdentity)
        #expect(card.fingerprint == alice.publicIdentity.fingerprint)
        #expect(card.userID == alice.publicIdentity.userID)
        #expect(try ContactCard(text: "  \n" + alice.card.text + "\n").text == alice.card.text)
    }

    @Test(arguments: ["", "hello", "https://example.com/qr", "WIFI:S:home;T:WPA;P:secret;;",
                      "yaok:1:", "yaok:1:!!!!", "yaok:3:AAAA", "YAOK:1:AAAA", "yaok:1:A"])
    func foreignOrBrokenTextIsInvalid(text: String) {
        #expect(throws: YaOKError(.invalidCard)) { try ContactCard(text: text) }
    }

    @Test func invalidCardMessageIsTheSpecOne() {
        #expect(YaOKError(.invalidCard).message == "Invalid Ya OK QR code")
    }

    @Test func everySingleByteCorruptionIsDetected() throws {
        let payload = alice.card.payload
        for i in payload.indices {
            var bad = payload
            bad[i] ^= 0x01
            #expect(throws: YaOKError(.invalidCard)) { try ContactCard(payload: bad) }
        }
    }

    @Test func truncatedAndExtendedPayloadsAreInvalid() throws {
        let payload = alice.card.payload
        for n in [0, 1, 66, 67, payload.count - 1] {
            #expect(throws: YaOKError(.invalidCard)) { try ContactCard(payload: Array(payload.prefix(n))) }
        }
        #expect(throws: YaOKError(.invalidCard)) { try ContactCard(payload: payload + [0]) }
    }

    @Test func swappedNameWithValidSignatureOfAnotherKeyIsInvalid() throws {
        // Mallory re-signs Alice's keys under her own name: the signature must be by the card's key.
        let mallory = try Identity(name: "Mallory")
        var forged = mallory.card.payload
        forged.replaceSubrange(1..<65, with: alice.publicIdentity.encryptionKey + alice.publicIdentity.signingKey)
        #expect(throws: YaOKError(.invalidCard)) { try ContactCard(payload: forged) }
    }

    @Test func paddedOrAlteredAlphabetIsInvalid() throws {
        let text = alice.card.text
        #expect(throws: YaOKError(.invalidCard)) { try ContactCard(text: text + "=") }
        #expect(throws: YaOKError(.invalidCard)) { try ContactCard(text: text.replacingFirst("-", with: "+")) }
        #expect(throws: YaOKError(.invalidCard)) { try ContactCard(text: text + "AAAA") }
    }
}

extension String {
    func replacingFirst(_ a: Character, with b: Character) -> String {
        guard let i = firstIndex(of: a) else { return self + "+" }
        var s = self
        s.replaceSubrange(i...i, with: String(b))
        return s
    }
}
