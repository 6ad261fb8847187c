import YaOKSupport

/// Two nodes joined in memory through `Node.openLink`, as an app's own radio would join
/// them: for the demo, in-process tests and simulations. `mtu` below a packet's size makes
/// the link fragment; `drop` makes it lose units (lossy radio, failed attempts).
public final class MemoryPipe: Sendable {
    public let initiator: Link
    public let responder: Link
    /// Boxed: a closure stored directly as a generic `Locked` value gains a thunk on every
    /// access (see EventSink).
    private final class Rule: Sendable {
        let drops: @Sendable ([UInt8]) -> Bool
        init(_ drops: @escaping @Sendable ([UInt8]) -> Bool) { self.drops = drops }
    }
    private let dropping = Locked<Rule?>(nil)

    public convenience init(_ a: Node, _ b: Node, mtu: Int = 65_535, transport: String = "memory") throws {
        try self.init(a, b, mtu: mtu, transport: transport, sendsFromAnyThread: false)
    }

    /// `sendsFromAnyThread`: the links take their units on any thread, as LAN's do
    /// (`LinkSender.anyThread`), instead of on the event thread as an app's radio's.
    package init(_ a: Node, _ b: Node, mtu: Int = 65_535, transport: String = "memory", sendsFromAnyThread: Bool) throws {
        let toB = PipeEnd(), toA = PipeEnd()
        let drop = dropping
        func sender(_ to: PipeEnd) -> LinkSender {
            let send: @Sendable ([UInt8]) -> Void = { unit in
                if drop.withLock({ $0 })?.drops(unit) != true { to.deliver(unit) }
            }
            return sendsFromAnyThread ? .anyThread { units in for unit in units { send(unit) } } : .eventThread(send)
        }
        // A node that ends its side (handshake timeout, a protocol error) ends the pipe, as a
        // TCP connection or a radio link would end for both.
        initiator = try a.openLink(transport: transport, role: .initiator, mtu: mtu, stream: false, sender: sender(toB),
                                   closed: { reason in toB.close(reason) })
        responder = try b.openLink(transport: transport, role: .responder, mtu: mtu, stream: false, sender: sender(toA),
                                   closed: { reason in toA.close(reason) })
        toB.connect(responder)
        toA.connect(initiator)
    }

    /// From now on, units for which `rule` returns true are lost (nil: none).
    public func drop(_ rule: (@Sendable ([UInt8]) -> Bool)?) { dropping.withLock { $0 = rule.map(Rule.init) } }

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

    /// The far side's node ended the link: end this side too.
    func close(_ reason: String) {
        let link = state.withLock { $0.link }
        link?.close(reason: "The other side closed the link: \(reason)")
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
