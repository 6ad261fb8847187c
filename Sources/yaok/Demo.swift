import ArgumentParser
import YaOK

/// Two people, one message: identities, an exchange of contact cards (the QR payloads),
/// and a message sealed by one and opened by the other — all in this process.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create two identities, exchange cards, send one encrypted message.")

    @OptionGroup var options: GlobalOptions  // accepted for uniformity; the demo keeps nothing on disk

    @Option(help: "The message Alice sends to Bob.")
    var message = "Hello, Bob! 🔒"

    func run() throws {
        let alice = try Identity(name: "Alice")
        let bob = try Identity(name: "Bob")
        print("Alice  user \(alice.publicIdentity.userID)  fingerprint \(alice.publicIdentity.fingerprint.short)")
        print("Bob    user \(bob.publicIdentity.userID)  fingerprint \(bob.publicIdentity.fingerprint.short)")

        // Each scans the other's QR code: the card text is all that travels.
        let bobAsSeenByAlice = try ContactCard(text: bob.card.text)
        let aliceAsSeenByBob = try ContactCard(text: alice.card.text)
        print("\nAlice scans Bob's card:  \(bob.card.text.prefix(40))…")
        print("  preview: \(bobAsSeenByAlice.name), \(bobAsSeenByAlice.fingerprint)")
        print("Bob scans Alice's card:  preview \(aliceAsSeenByBob.name), \(aliceAsSeenByBob.fingerprint.short)")

        let messageID = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let now = UInt64(Clock.milliseconds())
        let sealed = try Envelope.seal(Array(message.utf8), from: alice,
                                       to: bobAsSeenByAlice.publicIdentity.encryptionKey,
                                       messageID: messageID, timestamp: now)
        print("\nAlice seals \(message.utf8.count) bytes for Bob: \(sealed.count) bytes on the wire")

        let opened = try Envelope.open(sealed, by: bob, messageID: messageID, timestamp: now,
                                       isKnownSender: { $0 == aliceAsSeenByBob.publicIdentity.encryptionKey })
        print("Bob opens it, from \(aliceAsSeenByBob.name) (authenticated): \(String(decoding: opened.body, as: UTF8.self))")

        let eve = try Identity(name: "Eve")
        do {
            _ = try Envelope.open(sealed, by: eve, messageID: messageID, timestamp: now)
        } catch let error as YaOKError {
            print("Eve tries to open it: \(error.message)")
        }
    }
}
