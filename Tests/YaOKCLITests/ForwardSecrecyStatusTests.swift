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

        // Nothing heard from Bob: his first message would go to his long-term key.
        let text = try alice.run(["status"]).stdout
        let line = try #require(text.split(separator: "\n").first { $0.contains("Bob") })
        #expect(line.contains("forward secrecy: not yet (no receiver key from this contact)"))

        let json = try #require(try alice.run(["status", "--json"]).json as? [String: Any])
        let contacts = try #require((json["diagnostics"] as? [String: Any])?["contacts"] as? [[String: Any]])
        let fs = try #require(contacts.first?["forward_secrecy"] as? [String: Any])
        #expect(fs["state"] as? String == "not_yet")
        #expect(fs["long_term_seals"] as? Int == 0)
        #expect(fs["receiver_keys"] as? Int == 0)

        // A send (one process) is counted in what `status` (another process) shows: the
        // count is kept in the store, not in the memory of the node that sealed it.
        #expect(try alice.run(["send", "Bob", "before any key"]).status == 0)
        let after = try #require(try alice.run(["status", "--json"]).json as? [String: Any])
        let afterContacts = try #require((after["diagnostics"] as? [String: Any])?["contacts"] as? [[String: Any]])
        let afterFS = try #require(afterContacts.first?["forward_secrecy"] as? [String: Any])
        #expect(afterFS["long_term_seals"] as? Int == 1)
        #expect(try alice.run(["status"]).stdout.contains("1 sealed to the long-term key"))
    }
}
