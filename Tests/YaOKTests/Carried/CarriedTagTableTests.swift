import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The recipient's precomputed contacts × epochs table (docs/PROTOCOL.md §10.3).
@Suite struct CarriedTagTableTests {
    let me = try! Identity(name: "Me")
    let now: Int64 = 1_700_000_000_000

    func contacts(_ n: Int) throws -> [Int: (Identity, RoutePair)] {
        var out: [Int: (Identity, RoutePair)] = [:]
        for i in 0..<n {
            let c = try Identity(name: "C\(i)")
            out[i] = (c, try RoutePair(own: me, peerKey: c.publicIdentity.encryptionKey))
        }
        return out
    }

    @Test func sizeIsContactsTimesEpochs() throws {
        #expect(CarriedTagTable<Int>.epochCount == 16)
        let people = try contacts(25)
        var table = CarriedTagTable(routes: people.mapValues(\.1), nowMs: now)
        #expect(table.count == 25 * 16)
        // A day later: one epoch out, one in; the size stays.
        table.advance(nowMs: now + RoutingTag.dayMs)
        #expect(table.count == 25 * 16)
        #expect(table.firstEpoch == RoutingTag.day(ofMs: now) + 1)
        table.advance(nowMs: now + 100 * RoutingTag.dayMs)
        #expect(table.count == 25 * 16)
        // A clock set back moves the window back: today's packets are recognised again.
        table.advance(nowMs: now)
        #expect(table.count == 25 * 16)
        #expect(table.firstEpoch == RoutingTag.day(ofMs: now))
        let (i, (person, _)) = try #require(people.first)
        let back = try CarriedSeal.seal(try .message([1], createdMs: now), from: person,
                                        route: try RoutePair(own: person, peerKey: me.publicIdentity.encryptionKey))
        #expect(table.sender(of: back) == i)
        let extra = try Identity(name: "New")
        table.insert(99, route: try RoutePair(own: me, peerKey: extra.publicIdentity.encryptionKey))
        #expect(table.count == 26 * 16)
        table.remove(3)
        #expect(table.count == 25 * 16)
    }

    @Test func everyLiveEpochIsRecognised() throws {
        let people = try contacts(5)
        let table = CarriedTagTable(routes: people.mapValues(\.1), nowMs: now)
        for (index, (person, _)) in people {
            let route = try RoutePair(own: person, peerKey: me.publicIdentity.encryptionKey)
            // The shortest and the longest lifetime: the first and the last live epoch.
            for lifetime in [60_000, CarriedPacket.maxLifetimeMs] {
                let packet = try CarriedSeal.seal(try .message([1], createdMs: now), from: person, route: route, lifetimeMs: lifetime)
                #expect(table.sender(of: packet) == index)
                #expect(try CarriedSeal.open(packet, by: me, senderKey: person.publicIdentity.encryptionKey).kind == .message(text: [1]))
                // The tag of the right pair with another expiry day is not accepted.
                var moved = packet
                moved.expiryHour += 24
                #expect(table.sender(of: moved) == nil)
            }
        }
        // Someone else's packet.
        let (a, b) = (try Identity(name: "Anna"), try Identity(name: "Bert"))
        let foreign = try CarriedSeal.seal(try .message([1], createdMs: now), from: a,
                                           route: try RoutePair(own: a, peerKey: b.publicIdentity.encryptionKey))
        #expect(table.sender(of: foreign) == nil)
    }
}
