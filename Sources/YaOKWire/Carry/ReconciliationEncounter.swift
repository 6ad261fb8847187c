import YaOKSupport

/// Two `Reconciler`s joined in memory, as an encounter would join them over a link: for
/// tests, the benchmark and a simulator. The initiator sends its have/want lists together
/// with its next range message, so they add bytes but no round trips. Pure Swift.
public struct ReconciliationEncounter {
    public struct Outcome: Sendable {
        public let initiator: Reconciler
        public let responder: Reconciler
        /// Range messages the initiator sent, each answered by the responder.
        public let roundTrips: Int
        /// Whether the initiator finished (every difference found and reported), rather
        /// than a side running out of budget.
        public let complete: Bool
        public var totalBytes: Int { initiator.bytesSent + responder.bytesSent }
    }

    /// Runs the whole exchange; throws what a side's decoder throws (never, between two
    /// honest sides with the same id length and limits).
    public static func run(initiator a: ReconciliationSet, responder b: ReconciliationSet,
                           parameters: ReconciliationParameters, hash: any ReconciliationHash) throws -> Outcome {
        var initiator = try Reconciler(store: a, role: .initiator, parameters: parameters, hash: hash)
        var responder = try Reconciler(store: b, role: .responder, parameters: parameters, hash: hash)
        var step = try initiator.initiate()
        var roundTrips = 0
        var complete = false
        while case .send(let message) = step {
            roundTrips += 1
            let answer = try responder.receive(message)
            let reply: [UInt8]
            switch answer {
            case .send(let bytes): reply = bytes
            case .finish(let bytes): reply = bytes
            default: reply = []
            }
            guard !reply.isEmpty else { break }
            step = try initiator.receive(reply)
            // Have/want lists go before the next range message, the final "settled" included.
            while let list = initiator.takeHaveWant() {
                _ = try responder.receive(list)
            }
            if case .finish(let settled) = step {
                step = try responder.receive(settled)
            }
            if step == .finished { complete = initiator.haveWantReported && responder.isFinished }
        }
        return Outcome(initiator: initiator, responder: responder, roundTrips: roundTrips, complete: complete)
    }
}

extension ReconciliationEncounter.Outcome: CustomStringConvertible {
    public var description: String {
        "encounter(\(roundTrips) round trips, \(totalBytes) bytes, \(complete ? "complete" : "incomplete"))"
    }
}

extension Reconciler: CustomStringConvertible {
    public var description: String {
        "Reconciler(\(role), \(have.count) have, \(want.count) want, \(bytesSent) sent, \(bytesReceived) received)"
    }
}
