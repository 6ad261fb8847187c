/// How the node hands a link's units to its transport.
///
/// An app's link (`Node.openLink`) is called on the event thread, one unit at a time, as
/// include/yaok.h and docs/ABI.md promise. A transport of this package whose send is safe
/// from any thread (LAN: its writes happen under its own lock) takes a flush's units for
/// the link at once, on whichever thread flushes: an app thread's `send` then hands its
/// units to the socket itself, in one write, instead of waking the event thread for it
/// (issue 20: that wake-up was most of the time from a send's sync to the wire).
package enum LinkSender: Sendable {
    /// One unit per call, on the event thread, never under the node's lock.
    case eventThread(@Sendable ([UInt8]) -> Void)
    /// A flush's units for the link, in sealing order, on any thread, never under the
    /// node's lock; one flusher at a time, so calls never overlap. Must not block.
    case anyThread(@Sendable ([[UInt8]]) -> Void)

    package var sendsFromAnyThread: Bool {
        if case .anyThread = self { true } else { false }
    }

    /// Hands `units`, in order, the way this link takes them.
    package func send(_ units: [[UInt8]]) {
        switch self {
        case .eventThread(let send): for unit in units { send(unit) }
        case .anyThread(let send): send(units)
        }
    }
}
