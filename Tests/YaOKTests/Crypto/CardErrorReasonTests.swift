import Testing
@testable import YaOKSupport
@testable import YaOKCrypto

/// A bad card says which defect it has (issue 21 §4): the status stays
/// YAOK_E_INVALID_CARD, the message names what the person should do about it.
@Suite struct CardErrorReasonTests {
    let alice = try! Identity(name: "Alice")

    private func message(_ text: String) -> String {
        do {
            _ = try ContactCard(text: text)
            return "decoded"
        } catch let error as YaOKError {
            #expect(error.code == .invalidCard)
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test func eachDefectHasItsOwnReason() throws {
        let text = alice.card.text
        let chars = Array(text)
        var altered = chars
        let i = chars.count - 5
        altered[i] = altered[i] == "A" ? "B" : "A"
        #expect(message(String(altered)).hasPrefix("Invalid Ya OK QR code: bad signature"))
        #expect(message("yaok:3:" + text.dropFirst(7)) .hasPrefix("Invalid Ya OK QR code: unsupported card version 3"))
        #expect(message("https://example.com/qr").hasPrefix("Invalid Ya OK QR code: not a Ya OK card"))
        #expect(message("yaok:1:!!!!").hasPrefix("Invalid Ya OK QR code: damaged"))
        #expect(message("yaok:1:" + Base64URL.encode(Array(alice.card.payload.prefix(80)))).hasPrefix("Invalid Ya OK QR code: damaged"))
        // Another version byte inside a yaok:1: text is damage: the text said version 1.
        var payload = alice.card.payload
        payload[0] = 2
        #expect(message("yaok:1:" + Base64URL.encode(payload)).hasPrefix("Invalid Ya OK QR code: damaged"))
        #expect(message(String(repeating: "a", count: 5000)).hasPrefix("Invalid Ya OK QR code: longer than 4096"))
    }
}
