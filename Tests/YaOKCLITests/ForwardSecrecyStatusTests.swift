import Foundation
import Testing

/// `yaok status` says, per contact, whether messages to it are forward-secret
/// (docs/PROTOCOL.md §13.5: a fallback to the long-term key is never silent), in text and
/// in the JSON's diagnostics.
@Suite(.serialized) struct ForwardSecrecyStatusTests {
    @Test func statusSaysForwardSecrecyPerContact() throws {
        let alice = CLI.temporary("fs-alice"), bob = CLI.temporary("fs-bob")
        #expect(try alice.run(["init", "--name", "Alice"]).status == 0)
        #expect(try bob.run(["init", "--name", "Bob"]).status == 0)
        let card = try #require((try bob.run(["card", "--json"]).json as? [String: Any])?["card"] as? String)
        #expect(try alice.run(["contacts", "add", card]).status == 0)

        // Nothing heard from Bob: a message would go to his card's prekey (version 2,
        // §13.4), exposed until the day the status names.
        #expect(card.hasPrefix("yaok:2:"))
        let text = try alice.run(["status"]).stdout
        let line = try #require(text.split(separator: "\n").first { $0.contains("Bob") })
        #expect(line.contains("forward secrecy: prekey (exposure until 20") && line.contains(" 00:00 UTC)"))

        let json = try #require(try alice.run(["status", "--json"]).json as? [String: Any])
        let contacts = try #require((json["diagnostics"] as? [String: Any])?["contacts"] as? [[String: Any]])
        let fs = try #require(contacts.first?["forward_secrecy"] as? [String: Any])
        #expect(fs["state"] as? String == "prekey")
        let until = try #require(fs["prekey_exposure_until_ms"] as? Int)
        #expect(until > Int(Date().timeIntervalSince1970 * 1000) + 22 * 86_400_000)
        #expect(fs["long_term_seals"] as? Int == 0)
        #expect(fs["receiver_keys"] as? Int == 0)

        // A send goes to the prekey: nothing is counted as sealed to the long-term key.
        #expect(try alice.run(["send", "Bob", "before any key"]).status == 0)
        let after = try #require(try alice.run(["status", "--json"]).json as? [String: Any])
        let afterContacts = try #require((after["diagnostics"] as? [String: Any])?["contacts"] as? [[String: Any]])
        let afterFS = try #require(afterContacts.first?["forward_secrecy"] as? [String: Any])
        #expect(afterFS["long_term_seals"] as? Int == 0 && afterFS["state"] as? String == "prekey")
    }
}
