import Dispatch
import YaOKSupport
import YaOKWire
import YaOKStore

/// Runs the relay's carrier off the loop thread (its store reads and commits would stall
/// every session): one serial queue, in the order frames arrived. Each result comes back
/// through `reply`, which the server posts to its loop.
final class RelayCarryThread: @unchecked Sendable {
    private let carrier: RelayCarrier
    private let storage: RelayCarryStorage
    private let queue = DispatchQueue(label: "yaok-relay-carry")
    /// Figures for stats, read from any thread.
    let figures = Locked((taken: 0, handed: 0, purged: 0, failures: 0))

    init(storage: RelayCarryStorage, policy: CarryPolicy, handedBytesPerAddressPerHour: Int) throws {
        self.storage = storage
        carrier = try RelayCarrier(store: storage.store, policy: policy, handedBytesPerAddressPerHour: handedBytesPerAddressPerHour)
    }

    func open(_ session: UInt64, address: UInt32) {
        queue.async { self.carrier.open(session, address: address) }
    }

    func close(_ session: UInt64) {
        queue.async { self.carrier.close(session) }
    }

    /// Handles one CARRY payload; `reply` gets the payloads to send back (none when the
    /// store failed: the meeting then stalls, the client meets again in its next session).
    /// `reply` also gets what this payload added to the carrier's totals (taken, handed,
    /// purged), for the relay's counters.
    func receive(_ message: CarryLinkMessage, from session: UInt64,
                 reply: @escaping @Sendable ([CarryLinkMessage], (taken: Int, handed: Int, purged: Int)) -> Void) {
        queue.async {
            let c = self.carrier
            let before = (c.taken, c.handed, c.purged)
            var out: [CarryLinkMessage] = []
            do {
                out = try c.receive(message, from: session, nowMs: Clock.milliseconds())
            } catch {
                self.figures.withLock { $0.failures += 1 }
            }
            self.figures.withLock { $0.taken = c.taken; $0.handed = c.handed; $0.purged = c.purged }
            reply(out, (c.taken - before.0, c.handed - before.1, c.purged - before.2))
        }
    }

    /// Waits for the queue to drain, then closes the store. Not from the queue.
    func stop() {
        queue.sync { self.storage.store.close() }
    }
}
