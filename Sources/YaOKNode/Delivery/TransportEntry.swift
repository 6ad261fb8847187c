/// A registered transport as the engine tracks it.
struct TransportEntry {
    let transport: Transport
    var phase: TransportState.Phase = .disabled
    var error: String?
    var lastActivity: Int64?
    /// What the transport last reported (`Node.reportConnection`); nil: it reports none.
    var connection: TransportConnection?
    /// Whether its last attempt reached the other end (`TransportConnection.answered`);
    /// kept while it connects again, so "Internet" does not flap between retries.
    var answered: Bool?
    /// The sequence of the newest report taken (`TransportConnection.nextSequence`): an
    /// older one that arrives later (two threads reporting at once) is dropped. Kept across
    /// stop and start.
    var reportSequence: UInt64?
    /// The connection last announced (TRANSPORT_CONNECTION): a start or stop announces its
    /// state only if a report during it has not already (a relay that connects before its
    /// start returns would otherwise be announced "connected" twice).
    var announced: TransportConnection?
}
