import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// An own carried copy's take into the carry store (docs/PROTOCOL.md §12.6, issue 20): in
/// its batch's transaction without a savepoint of its own and without decoding the bytes
/// it just encoded, checked and clamped as any packet; each copy planned in one statement
/// (its flag and its message row together).
@Suite(.serialized) struct OwnCopyTakeTests {
    @Test func aBatchPlansEachCopyInOneStatementAndTakesItWithoutASavepoint() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let sent = try (0..<3).map { try m["Alice"].send(to: carolAtAlice, text: "Carried cheaply \($0)") }
        try m["Alice"].withDatabase { $0.statementLog = [] }
        #expect(try m["Alice"].makeOwnCarriedCopies() == 3)
        let statements = try m["Alice"].withDatabase { db in
            defer { db.statementLog = nil }
            return db.statementLog ?? []
        }
        #expect(statements.filter { $0.hasPrefix("SAVEPOINT") } == [])
        #expect(statements.filter { $0.contains("JOIN messages") }.count == 3)
        #expect(statements.filter { $0.contains("FROM messages WHERE message_id = ? AND direction = 0") } == [])
        #expect(m["Alice"].carriedCount == 3)
        for message in sent {
            let own = m["Alice"].state.withLock { s in (try? s.store?.ownCarried(messageID: message.messageID.bytes)) ?? nil }
            #expect(own?.contactID == carolAtAlice)
        }
    }

    @Test func anOwnPacketIsCheckedAndClampedAsOfferedBytesAre() throws {
        let offered = try CarryBench()
        defer { offered.finish() }
        let own = try CarryBench()
        defer { own.finish() }
        let packet = try offered.packet(budget: 20, hop: 30)
        let depositor = CarryBench.alice
        let viaBytes = try offered.store.takeCarried(packet.encode(), from: depositor, nowMs: offered.now, quota: false)
        let viaPacket = try own.store.db.transaction {
            try own.store.takeOwnCarried(packet, from: depositor, nowMs: own.now, policy: .default)
        }
        #expect(viaPacket == viaBytes)
        guard case .taken(let entry, _) = viaPacket else { Issue.record("not taken"); return }
        #expect(entry.copyBudget == CopyBudget.maximum && entry.hopLimit == HopLimit.maximum)
        #expect(try own.store.carriedPacket(entry.id)?.encode() == offered.store.carriedPacket(entry.id)?.encode())
        // Held already: a duplicate, as for bytes.
        #expect(try own.store.db.transaction { try own.store.takeOwnCarried(packet, from: depositor, nowMs: own.now,
                                                                             policy: .default) } == .duplicate)
        // Expired: refused as bytes are, nothing stored.
        let late = packet.expiresAtMs
        #expect(throws: YaOKError.self) {
            try own.store.db.transaction { try own.store.takeOwnCarried(try own.packet(), from: depositor, nowMs: late + 3_600_000 * 48,
                                                                          policy: .default) }
        }
        // Outside a transaction: refused (its writes need the caller's to roll back whole).
        #expect(throws: YaOKError.self) {
            try own.store.takeOwnCarried(try own.packet(), from: depositor, nowMs: own.now, policy: .default)
        }
    }
}
