import YaOKSupport

/// Two nodes joined in memory through `Node.openLink`, as an app's own radio would join
/// them: for the demo, in-process tests and simulations. `mtu` below a packet's size makes
/// the link fragment; `drop` makes it lose units (lossy radio, failed attempts).
public final class MemoryPipe: Sendable {
    public let initiator: Link
    public let responder: Link
    private let dropping = Locked<(@Sendable ([UInt8]) -> Bool)?>(nil)

    public init(_ a: Node, _ b: Node, mtu: Int = 65_535, transport: String = "memory") throws {
        let toB = PipeEnd(), toA = PipeEnd()
        let drop = dropping
        initiator = try a.openLink(transport: transport, role: .initiator, mtu: mtu, send: { unit in
            if drop.withLock({ $0?(unit) }) != true { toB.deliver(unit) }
        })
        responder = try b.openLink(transport: transport, role: .responder, mtu: mtu, send: { unit in
            if drop.withLock({ $0?(unit) }) != true { toA.deliver(unit) }
        })
        toB.connect(responder)
        toA.connect(initiator)
    }

    /// From now on, units for which `rule` returns true are lost (nil: none).
    public func drop(_ rule: (@Sendable ([UInt8]) -> Bool)?) { dropping.withLock { $0 = rule } }

    public func close() {
        initiator.close()
        responder.close()
    }
}

/// One direction of a pipe: units sent before the far link exists wait for it.
private final class PipeEnd: Sendable {
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
