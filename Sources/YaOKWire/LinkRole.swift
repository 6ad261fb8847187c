/// Which side of a link a node is (docs/PROTOCOL.md §5.2): the initiator speaks first
/// (sends handshake message 1), the responder answers. The TCP connector, the BLE central,
/// or whichever side an app's own radio protocol says. The one spelling of the role: the
/// handshake, `Link.Role` (the same type), the transports and the carry reconciler (the
/// link's initiator opens reconciliation, PROTOCOL §11) use it; only the C ABI
/// numbers it (`YAOK_LINK_INITIATOR`, `YAOK_LINK_RESPONDER`).
public enum LinkRole: Sendable, Equatable {
    case initiator, responder
}
