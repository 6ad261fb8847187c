import ArgumentParser
import Foundation
import YaOK

/// The foundation end to end, in one process: two people set up (PIN-sealed stores in
/// temporary directories), exchange contact cards (the QR payloads), and one sends the
/// other a message as a wire packet that only the other can open.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Two people, their cards, and one end-to-end encrypted message.")

    @OptionGroup var options: GlobalOptions  // accepted for uniformity; the demo keeps nothing

    @Option(help: "The message Alice sends to Bob.")
    var message = "Hello, Bob! 🔒"

    func run() throws {
        try Output.run(json: false) {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("yaok-demo-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            let alice = try Node(dataDirectory: root.appendingPathComponent("alice").path)
            let bob = try Node(dataDirectory: root.appendingPathComponent("bob").path)
            defer { alice.close(); bob.close() }

            print("1. Setup: each identity is sealed under a PIN (Argon2id, 64 MiB)")
            let a = try alice.setup(name: "Alice", pin: "246810", confirmation: "246810").identity
            let b = try bob.setup(name: "Bob", pin: "135791", confirmation: "135791").identity
            print("   Alice  \(a.publicIdentity.fingerprint)")
            print("   Bob    \(b.publicIdentity.fingerprint)")

            print("\n2. They scan each other's QR codes (the contact cards)")
            let preview = try alice.previewContact(card: b.card.text)
            print("   Alice sees a preview: \(preview.name), \(preview.fingerprint.short)… and adds him")
            let bobForAlice = try alice.addContact(card: b.card.text)
            _ = try bob.addContact(card: a.card.text)

            print("\n3. Alice writes; the message is stored encrypted and sealed into a packet")
            let outgoing = try alice.storeOutgoing(to: bobForAlice.id, text: message)
            let (header, packet) = try SealedMessage.seal(Array(message.utf8), from: a,
                                                          to: bobForAlice.publicIdentity.encryptionKey,
                                                          createdMs: UInt64(outgoing.senderTimestamp),
                                                          messageID: try MessageID(bytes: outgoing.messageID))
            print("   \(message.utf8.count) bytes of text → a \(packet.count)-byte packet; a relay sees only a routing tag "
                  + String(format: "%016llx", header.routingTag.value) + " and the size bucket")

            print("\n4. The packet reaches Bob over any transport; only he can open it")
            guard case .routed(let received, let payload) = try Packet.decode(packet) else { return }
            let contacts = try bob.contacts()
            let opened = try SealedMessage.open(received, payload: payload, by: try bob.identity(),
                                                isKnownSender: { key in contacts.contains { $0.publicIdentity.encryptionKey == key } })
            guard let sender = contacts.first(where: { $0.publicIdentity.encryptionKey == opened.senderKey }) else { return }
            try bob.storeIncoming(from: sender.id, text: String(decoding: opened.body, as: UTF8.self),
                                  messageID: received.messageID.bytes, sentAt: Int64(received.createdMs))
            for m in try bob.history(sender.id).messages {
                print("   Bob's conversation with \(sender.name): \"\(m.text)\" (authenticated, unread: \(m.unread))")
            }

            print("\n5. Anyone else gets a clear refusal, never the text")
            do {
                _ = try SealedMessage.open(received, payload: payload, by: try Identity(name: "Eve"))
            } catch let error as YaOKError {
                print("   Eve: \(error.message)")
            }
            var tampered = packet
            tampered[tampered.count - 1] ^= 1
            if case .routed(let h, let p) = try Packet.decode(tampered) {
                do { _ = try SealedMessage.open(h, payload: p, by: try bob.identity()) } catch let error as YaOKError {
                    print("   A flipped bit: \(error.message)")
                }
            }
        }
    }
}
