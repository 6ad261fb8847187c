/// A registered transport as the engine tracks it.
struct TransportEntry {
    let transport: Transport
    var phase: TransportState.Phase = .disabled
    var error: String?
    var lastActivity: Int64?
}
