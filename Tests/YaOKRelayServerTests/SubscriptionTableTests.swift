import XCTest
@testable import YaOKRelayServer
@testable import YaOKWire

/// The compact subscription structures (issue 17 §2): a session's sorted table of
/// cursors, and the relay's index keyed by a mailbox's first 8 bytes, where two mailboxes
/// may share a prefix.
final class SubscriptionTableTests: XCTestCase {
    func mailbox(_ prefix: UInt8, _ tail: UInt8) throws -> MailboxID {
        try MailboxID(bytes: [UInt8](repeating: prefix, count: 8) + [UInt8](repeating: tail, count: 24))
    }

    func testTableMergesBatchesKeepsCursorsAndHoldsOnlyItsCount() throws {
        var table = SubscriptionTable()
        let a = try mailbox(3, 1), b = try mailbox(1, 2), c = try mailbox(2, 3)
        table.insert([MailboxKey(a), MailboxKey(b), MailboxKey(a)])
        table[a] = 7
        table.insert([MailboxKey(c), MailboxKey(a)])
        XCTAssertEqual(table.count, 3)
        XCTAssertEqual(table.capacity, 3, "sized to its count")
        XCTAssertEqual(table[a], 7, "a repeated mailbox keeps its cursor")
        XCTAssertEqual(table[c], 0)
        XCTAssertEqual(table.keys, [MailboxKey(b), MailboxKey(c), MailboxKey(a)], "sorted")
        table[try mailbox(9, 9)] = 5
        XCTAssertNil(table[try mailbox(9, 9)], "setting a cursor does not subscribe")
        XCTAssertEqual(MemoryLayout<SubscriptionTable.Entry>.stride, 40)
        XCTAssertEqual(MailboxKey(a).mailboxID, a)
    }

    func testIndexKeepsEverySessionOfASharedPrefix() throws {
        var index = SubscriberIndex()
        let x = MailboxKey(try mailbox(5, 1)), y = MailboxKey(try mailbox(5, 2))
        index.insert(x, session: 1)
        index.insert(y, session: 2)
        index.insert(x, session: 3)
        index.insert(x, session: 3)
        XCTAssertEqual(Set(index.candidates(y)), [1, 2, 3], "candidates: the caller checks each session's table")
        XCTAssertEqual(index.candidates(x).count, 3)
        index.remove(x, session: 1)
        XCTAssertEqual(Set(index.candidates(x)), [2, 3])
        index.remove(y, session: 2)
        index.remove(x, session: 3)
        XCTAssertEqual(index.candidates(x), [])
        XCTAssertEqual(index.count, 0)
    }
}
