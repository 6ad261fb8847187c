import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// A sealed-looking carried packet (random payload: the relay never opens one) and the
/// claim that purges it (§10.6).
func carriedPacket(nowMs: Int64, budget: UInt8 = 8, hop: UInt8 = 7, lifetimeMs: Int64 = 86_400_000,
                   tag: UInt64 = 0x0102030405060708, payloadLength: Int = 128) throws -> (packet: CarriedPacket, claim: [UInt8]) {
    let claim = PurgeClaim.random()
    let packet = try CarriedPacket(hopLimit: hop, copyBudget: budget,
                                   expiryHour: try CarriedPacket.expiryHour(createdMs: nowMs, lifetimeMs: lifetimeMs),
                                   routingTag: RoutingTag(value: tag), claimHash: PurgeClaim.hash(claim),
                                   payload: Sodium.randomBytes(payloadLength))
    return (packet, claim)
}

/// A node's side of a meeting with the relay (§12.3, the client the initiator), reduced to
/// what the relay sees: reconcile from what it holds, offer what the relay lacks, hand over
/// (budget 1: the relay keeps wait-phase copies, §12.9) what it is asked for, ask for what
/// `wants` picks (a recipient asks for its own tags), answer `taken`, publish `claims`.
/// `exchange` sends one payload to the relay and returns what came back.
final class CarryClient {
    var held: [[UInt8]: CarriedPacket] = [:]
    var received: [CarriedPacket] = []
    var claimsHeard: [[UInt8]] = []
    var takenByRelay: [[UInt8]] = []
    var refusedByRelay: [[UInt8]] = []
    var requestedByRelay: [[UInt8]] = []
    var offeredByRelay: [CarryOffer] = []
    var wants: (CarryOffer) -> Bool = { _ in false }
    let exchange: (CarryLinkMessage) throws -> [CarryLinkMessage]

    init(holding packets: [CarriedPacket] = [], exchange: @escaping (CarryLinkMessage) throws -> [CarryLinkMessage]) {
        for p in packets { held[p.identity] = p }
        self.exchange = exchange
    }

    func meet(nowMs: Int64, publishing claims: [[UInt8]] = []) throws {
        let items = try held.values.map {
            try ReconciliationItem(expiry: UInt64($0.expiresAtMs / CarriedPacket.hourMs), id: $0.identity,
                                   idLength: CarryLinkMessage.identityLength)
        }
        var reconciler = try Reconciler(store: try ReconciliationSet(items, idLength: CarryLinkMessage.identityLength),
                                        role: .initiator, parameters: try .standard(idLength: CarryLinkMessage.identityLength),
                                        hash: ReconciliationBLAKE2b())
        var inbox: [CarryLinkMessage] = []
        var offered = Set<[UInt8]>()
        if case .send(let b) = try reconciler.initiate() { inbox += try exchange(.reconcile(b)) }
        if !claims.isEmpty { inbox += try exchange(.purge(try PurgeRecord(claims: claims))) }
        var steps = 0
        while !inbox.isEmpty, steps < 10_000 {
            steps += 1
            switch inbox.removeFirst() {
            case .reconcile(let bytes):
                let step = try reconciler.receive(bytes)
                var out: [[UInt8]] = []
                while let list = reconciler.takeHaveWant() { out.append(list) }
                if case .send(let b) = step { out.append(b) }
                if case .finish(let b) = step { out.append(b) }
                for b in out { inbox += try exchange(.reconcile(b)) }
                let fresh = reconciler.have.filter { !offered.contains($0) }
                if !fresh.isEmpty {
                    offered.formUnion(fresh)
                    let entries = fresh.compactMap { id in
                        held[id].map { CarryOffer(identity: id, routingTag: $0.routingTag, copyBudget: $0.copyBudget, claimHash: $0.claimHash) }
                    }
                    inbox += try exchange(.offer(entries))
                }
            case .offer(let entries):
                offeredByRelay += entries
                let want = entries.filter { wants($0) && held[$0.identity] == nil }.map(\.identity)
                if !want.isEmpty { inbox += try exchange(.request(want)) }
            case .request(let ids):
                requestedByRelay += ids
                for id in ids {
                    guard let p = held[id] else { continue }
                    let copy = try CarriedPacket(hopLimit: p.hopLimit > 0 ? p.hopLimit - 1 : 0, copyBudget: 1, expiryHour: p.expiryHour,
                                                 routingTag: p.routingTag, claimHash: p.claimHash, payload: p.payload)
                    inbox += try exchange(.carried(copy))
                }
            case .carried(let packet):
                received.append(packet)
                inbox += try exchange(.taken([packet.identity]))
            case .purge(let record): claimsHeard += record.claims
            case .taken(let ids): takenByRelay += ids
            case .refused(let ids): refusedByRelay += ids
            }
        }
    }
}
