@testable import YaOKSupport
@testable import YaOKCrypto

/// A virtual-clock network between two FSParty: each packet is delivered after the delay
/// the test's `channel` gives it, zero or more times (loss, duplicates); every message
/// packet is recorded per recipient.
final class FSNetwork {
    let alice: FSParty, bob: FSParty
    var now: Int64 = 1_700_000_000_000
    private var queue: [(at: Int64, seq: Int, packet: FSPacket)] = []
    private var seq = 0
    var recorded: [ObjectIdentifier: [FSMessage]] = [:]
    /// The delays of each copy of a packet (empty: lost). Default: one copy, one minute.
    var channel: (FSPacket) -> [Int64] = { _ in [60_000] }
    /// While set, nothing reaches or leaves this party (it is offline).
    var offline: FSParty?
    /// Called with the party that took a packet, after it did (a node saves its ring then).
    var afterEachDelivery: ((FSParty) throws -> Void)?

    /// `seed`: message IDs drawn from it (so a run replays; keys and ephemerals stay
    /// libsodium's, they only decide selectors).
    init(seed: UInt64? = nil) throws {
        alice = try FSParty("Alice")
        bob = try FSParty("Bob")
        if let seed {
            alice.ids = SeededRandom(seed: seed ^ 0xA11CE)
            bob.ids = SeededRandom(seed: seed ^ 0xB0B)
        }
        alice.peer = bob.identity
        bob.peer = alice.identity
    }

    func party(_ id: ObjectIdentifier) -> FSParty { id == ObjectIdentifier(alice.identity) ? alice : bob }
    func other(_ p: FSParty) -> FSParty { p === alice ? bob : alice }

    func post(_ packet: FSPacket) {
        if case .message(let m) = packet { recorded[m.to, default: []].append(m) }
        for delay in channel(packet) {
            seq += 1
            queue.append((now + delay, seq, packet))
        }
    }

    func send(_ from: FSParty, _ text: String) throws { post(try from.send(text, now: now)) }

    /// Runs the clock to `until`, delivering what is due (and what that provokes).
    func run(until: Int64) throws {
        while true {
            queue.sort { ($0.at, $0.seq) < ($1.at, $1.seq) }
            guard let next = queue.first, next.at <= until else { break }
            queue.removeFirst()
            now = max(now, next.at)
            let target: FSParty
            switch next.packet {
            case .message(let m): target = party(m.to)
            case .ack(let to, _, _): target = party(to)
            }
            let source = other(target)
            if let offline, offline === target || offline === source { continue }
            for reply in try target.receive(next.packet, from: source, now: now) { post(reply) }
            try afterEachDelivery?(target)
        }
        now = max(now, until)
    }

    func advance(_ ms: Int64) throws { try run(until: now + ms) }
}

extension FSParty {
    /// `ObjectIdentifier(peer)` in FSMessage names the recipient's Identity object.
    var id: ObjectIdentifier { ObjectIdentifier(identity) }
}
