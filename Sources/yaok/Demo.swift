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

            print("\n3. Alice sends: the message is encrypted, stored and queued in one step")
            let outgoing = try alice.send(to: bobForAlice.id, text: message)
            print("   status: \(outgoing.status.name) (no link to Bob yet: it waits)")

            print("\n4. A link joins them (here a memory pipe through the link API an app's radio uses):")
            print("   a Noise XX handshake, then the packet, Bob's receipt, and his acknowledgement")
            let pipe = try MemoryPipe(alice, bob)
            defer { pipe.close() }
            var status = outgoing.status
            for _ in 0..<500 where status != .delivered {
                usleep(10_000)
                status = try alice.outgoingMessage(outgoing.messageID).status
            }
            print("   Alice's message is now: \(status.name)")
            let aliceForBob = try bob.contacts()[0]
            for m in try bob.history(aliceForBob.id).messages {
                print("   Bob's conversation with \(aliceForBob.name): \"\(m.text)\" (authenticated, unread: \(m.unread))")
            }
            let (_, packet) = try SealedMessage.seal(Array(message.utf8), from: a, to: bobForAlice.publicIdentity.encryptionKey,
                                                     createdMs: outgoing.senderTimestamp)
            guard case .routed(let received, let payload) = try Packet.decode(packet) else { return }

            print("\n5. Anyone else gets a clear refusal, never the text")
            let aliceKey = a.publicIdentity.encryptionKey
            do {  // Eve holds Alice's card too, yet cannot compute the pair's routing tag
                _ = try SealedMessage.open(received, payload: payload, by: try Identity(name: "Eve"), contacts: [aliceKey])
            } catch let error as YaOKError {
                print("   Eve: \(error.message)")
            }
            var tampered = packet
            tampered[tampered.count - 1] ^= 1
            if case .routed(let h, let p) = try Packet.decode(tampered) {
                do { _ = try SealedMessage.open(h, payload: p, by: try bob.identity(), contacts: [aliceKey]) } catch let error as YaOKError {
                    print("   A flipped bit: \(error.message)")
                }
            }
        }
    }
}

