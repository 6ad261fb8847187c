import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// An ack that settles the last of our messages and moves the release answers with a
/// release-only ack (docs/PROTOCOL.md §13.3 rule 6), both on one ring: its drain writes the
/// ring's state once (issue 20: it wrote it twice, each a sealed row, at every such ack,
/// which is every message's round trip when a conversation goes one message at a time).
@Suite struct ReleaseRingWriteTests {
    private func ringStateWrites(_ log: [String]) -> Int {
        log.count { $0.hasPrefix("INSERT OR REPLACE INTO receiver_key_state") }
    }

    @Test func anAckThatReleasesWritesTheRingOnce() throws {
        let pair = try Pair()
        defer { pair.close() }
        var releases = 0
        for round in 0..<4 {
            let id = try pair.alice.send(to: pair.bobID, text: "round \(round)").messageID
            let packet = try pair.alice.withStore { store, _ in try store.outboxRow(id)?.packet ?? [] }
            try pair.bob.injectRouted(packet)
            let acks = try pair.bob.withStore { store, _ in try store.outboxRows(kind: .ack).map(\.packet) }
            try pair.bob.withStore { store, _ in
                for row in try store.outboxRows(kind: .ack) { try store.removeOutbox(row.packetID) }
            }
            for ack in acks {
                let releaseAcksBefore = try pair.alice.withStore { store, _ in try store.outboxRows(kind: .ack).count }
                try pair.alice.withDatabase { $0.statementLog = [] }
                try pair.alice.injectRouted(ack)
                let log = try pair.alice.withDatabase { db -> [String] in
                    defer { db.statementLog = nil }
                    return db.statementLog ?? []
                }
                let releaseAcks = try pair.alice.withStore { store, _ in try store.outboxRows(kind: .ack).count }
                #expect(ringStateWrites(log) <= 1, "round \(round): \(ringStateWrites(log)) writes of the ring's state")
                if releaseAcks > releaseAcksBefore {
                    releases += 1
                    #expect(ringStateWrites(log) == 1)
                }
            }
            #expect(try pair.alice.status(of: id) == .delivered)
            // The release-only acks reach Bob, who erases what they release.
            let release = try pair.alice.withStore { store, _ in try store.outboxRows(kind: .ack) }
            for row in release {
                try pair.bob.injectRouted(row.packet)
                try pair.alice.withStore { store, _ in try store.removeOutbox(row.packetID) }
            }
        }
        // The case under test happened: acks that released, answered on the same ring.
        #expect(releases >= 2)
    }
}
