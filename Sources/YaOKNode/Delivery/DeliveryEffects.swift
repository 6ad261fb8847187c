import YaOKWire

/// What the delivery engine decided and has not done yet: everything a locked section
/// leads to outside the lock, in one value. Units and carrier commands are handed to
/// transports by the flush, in the order they were sealed (`Node.flushOutgoing`);
/// events and closes are performed when the section that decided them ends
/// (`Node.withEngine`). A new kind of traffic is one more field here, inside `Mark` and
/// `rollback`, so a failed batch undoes it with the rest.
struct DeliveryEffects {
    /// Link units (sealed link packets, or their fragments), by link, in sealing order.
    var units: [(link: Link, unit: [UInt8])] = []
    /// What carriers are to be told, in order, flushed after `units`.
    var carrierCommands: [(carrier: Carrier, command: CarrierCommand)] = []
    /// Events for the app.
    var events: [NodeEvent] = []
    /// Links the node ends, with the reason the transport is told.
    var closes: [(link: Link, reason: String)] = []

    /// How much of each kind was decided at some point of a section. Nothing is taken out
    /// of the queues but from the front, by the flush (`takeTraffic`), which no mark
    /// outlives (the event thread's drain holds one across its sync: see
    /// `Node.withEngineSyncedAfter`): so what follows a mark is exactly what was queued
    /// after it. A closed carrier's commands are dropped by `takeTraffic`, not on close.
    struct Mark {
        fileprivate let units: Int
        fileprivate let carrierCommands: Int
        fileprivate let events: Int
    }

    var mark: Mark { Mark(units: units.count, carrierCommands: carrierCommands.count, events: events.count) }

    /// Forgets what was decided after `mark`: a batch whose transaction rolled back took
    /// nothing, so its receipts and carrier releases must not go out and its events did not
    /// happen. Closes stay: a link that broke the protocol is closed whether or not the
    /// batch around it was stored.
    mutating func rollback(to mark: Mark) {
        if units.count > mark.units { units.removeLast(units.count - mark.units) }
        if carrierCommands.count > mark.carrierCommands {
            carrierCommands.removeLast(carrierCommands.count - mark.carrierCommands)
        }
        if events.count > mark.events { events.removeLast(events.count - mark.events) }
    }

    /// Whether anything waits for a flush (units or carrier commands).
    var hasTraffic: Bool { !units.isEmpty || !carrierCommands.isEmpty }

    /// Where queued traffic is in the queues since the node opened (taken or not): a place
    /// that stays put while the flush takes from the front (`DeliveryEngine.heldTraffic`).
    struct Position: Equatable {
        fileprivate let units: Int
        fileprivate let carrierCommands: Int
    }

    /// How much the flush has taken so far.
    private var unitsTaken = 0, carrierCommandsTaken = 0

    /// Where the next unit and command queued will be.
    var end: Position { Position(units: unitsTaken + units.count, carrierCommands: carrierCommandsTaken + carrierCommands.count) }

    /// The earlier of two places, kind by kind.
    static func first(_ a: Position, _ b: Position) -> Position {
        Position(units: min(a.units, b.units), carrierCommands: min(a.carrierCommands, b.carrierCommands))
    }

    /// How many queued units and commands are before `limit` (all of them when nil).
    private func counts(before limit: Position?) -> (units: Int, commands: Int) {
        guard let limit else { return (units.count, carrierCommands.count) }
        return (min(max(limit.units - unitsTaken, 0), units.count),
                min(max(limit.carrierCommands - carrierCommandsTaken, 0), carrierCommands.count))
    }

    /// Whether anything before `limit` waits for a flush.
    func hasTraffic(before limit: Position?) -> Bool {
        let n = counts(before: limit)
        return n.units > 0 || n.commands > 0
    }

    /// Whether all that waits before `limit` may be handed on from any thread: units only,
    /// each for a link that takes them so (`LinkSender.anyThread`).
    func leavesFromAnyThread(before limit: Position?) -> Bool {
        let n = counts(before: limit)
        return n.commands == 0 && units.prefix(n.units).allSatisfy { $0.link.sender.sendsFromAnyThread }
    }

    /// Takes what a flush hands to transports (units, then carrier commands), from the
    /// front up to `limit` (everything when nil), the commands of carriers no longer `open`
    /// left out (closed after they were queued).
    mutating func takeTraffic(before limit: Position?, open: (Carrier) -> Bool)
        -> (units: [(link: Link, unit: [UInt8])], commands: [(carrier: Carrier, command: CarrierCommand)]) {
        let n = counts(before: limit)
        let taken = (Array(units.prefix(n.units)), carrierCommands.prefix(n.commands).filter { open($0.carrier) })
        units.removeFirst(n.units)
        carrierCommands.removeFirst(n.commands)
        unitsTaken += n.units
        carrierCommandsTaken += n.commands
        return taken
    }

    /// What the end of a section performs.
    typealias Outcome = (events: [NodeEvent], closes: [(link: Link, reason: String)])

    /// Takes what the end of a section performs (events, closes).
    mutating func takeOutcome() -> Outcome {
        defer {
            events = []
            closes = []
        }
        return (events, closes)
    }
}

/// What a carrier's transport is asked to do (Carrier.swift).
enum CarrierCommand {
    case post([CarrierPost])
    case release([MessageID])
    case mailboxesChanged
    /// A meeting payload for the service (§12.9).
    case carry(CarryLinkMessage)
}
