import Glibc
import YaOK

/// The store's figures (issue 3): contact delete with 50,000 messages, a 100-message page
/// from 10,000, adding a contact, and PIN verification time and memory, all with the
/// production Argon2id costs and `synchronous=FULL` on the real disk (not tmpfs).
enum StoreBench {
    static func run() throws {
        Measure.report("peak RSS at start", "\(Measure.format(Measure.peakRSSMiB(), decimals: 1)) MiB")
        let dir = "/tmp/yaok-bench-store-\(getpid())"
        defer { Measure.removeStore(dir) }
        let node = try Node(dataDirectory: dir)
        defer { node.close() }
        let pin = "482915"

        let rssBefore = Measure.peakRSSMiB()
        var t = Measure.now()
        _ = try node.setup(name: "Bench", pin: pin, confirmation: pin)
        Measure.report("setup (Argon2id seal)", Measure.ms(Measure.now() - t))
        try node.setAutoLock(.never)

        // PIN verification: lock, then unlock (Argon2id 64 MiB, 2 passes, then unseal).
        var unlocks: [Double] = []
        for _ in 0..<5 {
            try node.lock()
            t = Measure.now()
            try node.unlock(pin: pin)
            unlocks.append(Measure.now() - t)
        }
        Measure.report("PIN verification (unlock), median of 5", Measure.ms(Measure.median(unlocks)), target: "< 100 ms")
        Measure.report("peak RSS before setup / after unlocks", "\(Measure.format(rssBefore, decimals: 1)) / \(Measure.format(Measure.peakRSSMiB(), decimals: 1)) MiB")

        // Adding a contact: one transaction (one fsync) each; cards made beforehand.
        let cards = try (0..<200).map { try Identity(name: "Contact \($0)").card.text }
        var adds: [Double] = []
        var firstContact: Int64 = 0
        for card in cards {
            t = Measure.now()
            let c = try node.addContact(card: card)
            adds.append(Measure.now() - t)
            if firstContact == 0 { firstContact = c.id }
        }
        Measure.report("add a contact, median of 200 (200 stored)", Measure.ms(Measure.median(adds)), target: "< 5 ms")
        Measure.report("add a contact, slowest of 200", Measure.ms(adds.max() ?? 0))

        // A 100-message page from a conversation of 10,000.
        let talker = firstContact
        try fill(node, contact: talker, count: 10_000, seed: 1)
        let newest = Measure.perIteration(200) { _ = try? node.history(talker, limit: 100) }
        Measure.report("load newest 100 of 10,000 messages", Measure.ms(newest), target: "< 5 ms")
        var cursor: String? = nil
        for _ in 0..<50 { cursor = try node.history(talker, before: cursor, limit: 100).olderCursor }
        let deep = Measure.perIteration(200) { [cursor] in _ = try? node.history(talker, before: cursor, limit: 100) }
        Measure.report("load a page 5,000 messages back", Measure.ms(deep), target: "< 5 ms")

        // Deleting a contact with 50,000 messages (and the messages).
        let big = firstContact + 1
        t = Measure.now()
        try fill(node, contact: big, count: 50_000, seed: 2)
        Measure.report("(setup: store 50,000 messages in batches)", Measure.ms(Measure.now() - t))
        t = Measure.now()
        try node.deleteContact(big, deleteMessages: true)
        Measure.report("delete a contact with 50,000 messages", Measure.ms(Measure.now() - t), target: "< 1 s (seed: 15 s)")
        let big2 = firstContact + 2
        try fill(node, contact: big2, count: 50_000, seed: 3)
        t = Measure.now()
        try node.deleteContact(big2)
        Measure.report("delete a contact, keeping 50,000 messages", Measure.ms(Measure.now() - t))
        Measure.report("peak RSS at the end", "\(Measure.format(Measure.peakRSSMiB(), decimals: 1)) MiB")
    }

    /// `count` messages of ~100 bytes sent to `contact` (no link: they stay in the outbox),
    /// 5,000 per transaction.
    private static func fill(_ node: Node, contact: Int64, count: Int, seed: UInt8) throws {
        let text = String(repeating: "lorem ipsum ", count: 8) + "\(seed)"
        var n = 0
        while n < count {
            let batch = (n..<min(n + 5000, count)).map { _ in (contactID: contact, text: text) }
            try node.send(batch)
            n += batch.count
        }
    }
}
