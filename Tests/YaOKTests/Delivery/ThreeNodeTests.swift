import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Three nodes over the link API with one virtual clock: every pair talks over its own
/// link, each message arrives once, in order, and every status ends delivered — also when
/// one link is lossy and messages must be retried on the schedule.
@Suite struct ThreeNodeTests {
    @Test func everyoneTalksToEveryone() throws {
        let clock = TestClock()
        let dirs = [TempDir(), TempDir(), TempDir()]
        defer { dirs.forEach { $0.remove() } }
        let names = ["Alice", "Bob", "Carol"]
        let nodes = try zip(dirs, names).map { try makeNode($0, name: $1, clock: clock) }
        defer { nodes.forEach { $0.close() } }
        // contact[i][j]: node i's contact id for node j
        var contact = [[Int64]](repeating: [0, 0, 0], count: 3)
        for i in 0..<3 { for j in 0..<3 where i != j {
            contact[i][j] = try nodes[i].addContact(card: nodes[j].profile().text).id
        } }
        let pipes = try [(0, 1), (1, 2), (0, 2)].map { try MemoryPipe(nodes[$0.0], nodes[$0.1]) }
        defer { pipes.forEach { $0.close() } }
        for i in 0..<3 { for j in 0..<3 where i != j {
            #expect(eventually { nodes[i].linkIsOpen(to: contact[i][j]) })
        } }
        // The Bob–Carol link now loses every third unit: retries must get everything through.
        let counter = Locked(0)
        pipes[1].drop { _ in counter.withLock { $0 += 1; return $0 % 3 == 0 } }

        var sent: [(from: Int, to: Int, id: MessageID)] = []
        for round in 1...5 {
            for i in 0..<3 { for j in 0..<3 where i != j {
                sent.append((i, j, try nodes[i].send(to: contact[i][j], text: "\(names[i]) → \(names[j]) #\(round)").messageID))
            } }
        }
        // Drive retries with the virtual clock until everything is delivered.
        // Under load the event threads may lag behind the virtual clock (an attempt then
        // times out while its packet is still queued, and is retried): allow many rounds.
        for _ in 0..<300 {
            if sent.allSatisfy({ (try? nodes[$0.from].status(of: $0.id)) == .delivered }) { break }
            usleep(50_000)
            clock.advance(seconds: 31)
            for n in nodes { n.runDeliveryTimers() }
            clock.advance(seconds: 3600)  // past the longest retry delay
            for n in nodes { n.runDeliveryTimers() }
        }
        for s in sent { #expect(try nodes[s.from].status(of: s.id) == .delivered) }
        for i in 0..<3 { for j in 0..<3 where i != j {
            let received = try nodes[j].history(contact[j][i], limit: 1000).messages.filter { $0.direction == .incoming }
            #expect(received.map(\.text) == (1...5).map { "\(names[i]) → \(names[j]) #\($0)" })
        } }
    }
}
