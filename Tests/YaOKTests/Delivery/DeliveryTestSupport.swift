import Foundation
import Synchronization
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Two nodes joined by a memory pipe through the link API (what an app's own radio does).
/// `mtu` small enough forces fragmentation. `drop` decides, per unit, whether the pipe
/// loses it (to test lost packets and failed attempts).
final class MemoryPipe: Sendable {
    let a: Link
    let b: Link
    private let dropping = Locked<(@Sendable ([UInt8]) -> Bool)?>(nil)

    init(_ nodeA: Node, _ nodeB: Node, mtu: Int = 65_535, transport: String = "pipe") throws {
        let toB = PipeEnd(), toA = PipeEnd()
        let drop = dropping
        a = try nodeA.openLink(transport: transport, role: .initiator, mtu: mtu, send: { unit in
            if drop.withLock({ $0?(unit) }) == true { return }
            toB.deliver(unit)
        })
        b = try nodeB.openLink(transport: transport, role: .responder, mtu: mtu, send: { unit in
            if drop.withLock({ $0?(unit) }) == true { return }
            toA.deliver(unit)
        })
        toB.connect(b)
        toA.connect(a)
    }

    /// From now on, units for which `rule` returns true are lost.
    func drop(_ rule: (@Sendable ([UInt8]) -> Bool)?) { dropping.withLock { $0 = rule } }

    func close() {
        a.close()
        b.close()
    }
}

/// Two set-up nodes that have each other as contacts.
struct Pair {
    let dirA = TempDir(), dirB = TempDir()
    let alice: Node, bob: Node
    let bobID: Int64, aliceID: Int64   // contact ids: Bob in Alice's node, Alice in Bob's

    init(clock: TestClock? = nil) throws {
        alice = try makeNode(dirA, name: "Alice", clock: clock)
        bob = try makeNode(dirB, name: "Bob", clock: clock)
        bobID = try alice.addContact(card: bob.profile().text).id
        aliceID = try bob.addContact(card: alice.profile().text).id
    }

    func close() {
        alice.close()
        bob.close()
        dirA.remove()
        dirB.remove()
    }
}

extension Node {
    func status(of id: MessageID) throws -> MessageStatus? {
        try outgoingMessage(id).status
    }

    func texts(_ conversation: Int64) throws -> [String] {
        try history(conversation, limit: 1000).messages.map(\.text)
    }
}

/// One direction of a memory pipe: units sent before the far link exists wait for it.
final class PipeEnd: Sendable {
    private let state = Locked<(link: Link?, waiting: [[UInt8]])>((nil, []))

    func deliver(_ unit: [UInt8]) {
        let link = state.withLock { s -> Link? in
            if s.link == nil { s.waiting.append(unit) }
            return s.link
        }
        link?.receive(unit)
    }

    func connect(_ link: Link) {
        let waiting = state.withLock { s -> [[UInt8]] in
            s.link = link
            defer { s.waiting = [] }
            return s.waiting
        }
        for unit in waiting { link.receive(unit) }
    }
}
