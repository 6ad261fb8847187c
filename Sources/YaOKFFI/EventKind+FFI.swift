import CYaOK
import YaOK

/* ---- events: the ABI's numbers ---- */

/// YAOK_EVENT_* of include/yaok.h, the one place the core's events get their ABI numbers
/// (the core names events, the FFI numbers them). Never renumbered.
extension NodeEvent {
    var abiKind: UInt32 {
        switch self {
        case .locked: return YAOK_EVENT_LOCKED
        case .unlocked: return YAOK_EVENT_UNLOCKED
        case .security: return YAOK_EVENT_SECURITY
        case .messageStored: return YAOK_EVENT_MESSAGE_STORED
        case .messageStatusChanged: return YAOK_EVENT_MESSAGE_STATUS_CHANGED
        case .contactsChanged: return YAOK_EVENT_CONTACTS_CHANGED
        case .messageReceived: return YAOK_EVENT_MESSAGE_RECEIVED
        case .transportChanged: return YAOK_EVENT_TRANSPORT_CHANGED
        case .transportNotice: return YAOK_EVENT_TRANSPORT_NOTICE
        case .carryActivity: return YAOK_EVENT_CARRY_ACTIVITY
        case .linkOpened: return YAOK_EVENT_LINK_OPENED
        case .linkAuthenticated: return YAOK_EVENT_LINK_AUTHENTICATED
        case .linkClosed: return YAOK_EVENT_LINK_CLOSED
        case .transportConnection: return YAOK_EVENT_TRANSPORT_CONNECTION
        case .internetChanged: return YAOK_EVENT_INTERNET_CHANGED
        }
    }

    /// "YAOK_EVENT_LOCKED (1)", for messages.
    var abiLabel: String {
        let name: String
        switch self {
        case .locked: name = "LOCKED"
        case .unlocked: name = "UNLOCKED"
        case .security: name = "SECURITY"
        case .messageStored: name = "MESSAGE_STORED"
        case .messageStatusChanged: name = "MESSAGE_STATUS_CHANGED"
        case .contactsChanged: name = "CONTACTS_CHANGED"
        case .messageReceived: name = "MESSAGE_RECEIVED"
        case .transportChanged: name = "TRANSPORT_CHANGED"
        case .transportNotice: name = "TRANSPORT_NOTICE"
        case .carryActivity: name = "CARRY_ACTIVITY"
        case .linkOpened: name = "LINK_OPENED"
        case .linkAuthenticated: name = "LINK_AUTHENTICATED"
        case .linkClosed: name = "LINK_CLOSED"
        case .transportConnection: name = "TRANSPORT_CONNECTION"
        case .internetChanged: name = "INTERNET_CHANGED"
        }
        return "YAOK_EVENT_\(name) (\(abiKind))"
    }
}
