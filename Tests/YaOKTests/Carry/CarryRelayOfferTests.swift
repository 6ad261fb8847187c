import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A relay as a carrier (docs/PROTOCOL.md §12.9) offers only wait-phase copies, so a node
/// asks it only for its own mail. A hostile relay that offers spreading copies must not get
/// them into its clients' carry stores: each budget-8 copy would evict honest wait-phase
/// copies first (§10.9), in every client at once.
@Suite struct CarryRelayOfferTests {
    @Test func aNodeDoesNotTakeSpreadingCopiesFromARelay() throws {
        let m = try Meeting(["Bob"])
        defer { m.finish() }
        let sent = Locked<[CarryLinkMessage]>([])
        let carrier = try m["Bob"].openCarrier(transport: "relay", route: "hostile-relay", relay: Sodium.randomBytes(32),
                                               callbacks: CarrierCallbacks(post: { _ in }, release: { _ in },
                                                                           mailboxesChanged: {}, closed: { _ in },
                                                                           carry: { message in sent.withLock { $0.append(message) } }))
        let entries = (0..<4).map { i in
            CarryOffer(identity: Sodium.randomBytes(16), routingTag: RoutingTag(value: UInt64(100 + i)), copyBudget: 8,
                       claimHash: Sodium.randomBytes(16))
        }
        carrier.receiveCarry(.offer(entries))
        m.settle("Bob")
        let requests = sent.withLock { $0.filter { if case .request = $0 { return true } else { return false } } }
        #expect(requests.isEmpty)
        #expect(m["Bob"].state.withLock { $0.delivery.carry.sessions.values.allSatisfy { $0.asked.isEmpty } })
    }
}
