import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKNode

/// What a responder does with the connection after an abandoned handshake (PROTOCOL.md
/// §5.2): it sends nothing back, closes the link, and asks its transport to close the
/// connection; the connection is never used for a second handshake.
@Suite struct HandshakeAbandonTests {
    final class Captured: Sendable {
        let sent = Locked<[[UInt8]]>([])
        let closed = Locked<String?>(nil)
    }

    func responder(_ node: Node) throws -> (Link, Captured) {
        let captured = Captured()
        let link = try node.openLink(transport: "test", role: .responder, mtu: 1 << 16,
                                     send: { unit in captured.sent.withLock { $0.append(unit) } },
                                     closed: { reason in captured.closed.withLock { $0 = reason } })
        return (link, captured)
    }

    @Test func aBadFirstMessageClosesTheConnectionWithoutAReply() throws {
        let pair = try Pair()
        defer { pair.close() }
        // m1 of the wrong length, a link packet before the handshake, and junk.
        let badM1 = [0x01, 0x03, 0x00, 0x20, 0x01] + [UInt8](repeating: 7, count: 31)
        for unit in [badM1, [0x01, 0x04, 0x00, 0x01, 0x00], [1, 2, 3]] {
            let (link, captured) = try responder(pair.bob)
            #expect(link.receive(unit))
            #expect(eventually { captured.closed.withLock { $0 } != nil }, "the transport is told to close")
            #expect(captured.sent.withLock { $0 }.isEmpty, "nothing is sent back")
            #expect(!link.receive(unit), "the link is gone: a second handshake cannot start on it")
        }
    }

    @Test func aBadThirdMessageClosesTheConnectionAfterM2Only() throws {
        let pair = try Pair()
        defer { pair.close() }
        // A genuine m1 from Alice's side, taken from a real initiator.
        let m1 = Locked<[UInt8]?>(nil)
        let initiator = try pair.alice.openLink(transport: "test", role: .initiator, mtu: 1 << 16,
                                                send: { unit in m1.withLock { if $0 == nil { $0 = unit } } })
        defer { initiator.close() }
        #expect(eventually { m1.withLock { $0 } != nil })
        let first = try #require(m1.withLock { $0 })
        let (link, captured) = try responder(pair.bob)
        #expect(link.receive(first))
        #expect(eventually { captured.sent.withLock { $0.count } == 1 }, "m2")
        // m3 of the right length whose encrypted static key does not open.
        let badM3 = [0x01, 0x03, 0x00, 0xC1, 0x03] + [UInt8](repeating: 9, count: 192)
        #expect(link.receive(badM3))
        #expect(eventually { captured.closed.withLock { $0 } != nil })
        #expect(captured.sent.withLock { $0.count } == 1, "nothing after m2")
        #expect(!link.isAuthenticated)
    }
}
