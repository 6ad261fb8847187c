import CYaOK
import YaOK

/* ---- messages: the ABI's numbers ---- */

/// YAOK_MESSAGE_* and YAOK_DIRECTION_* of include/yaok.h, the one place a message's status
/// and direction get their ABI numbers. The core's raw values are something else: the
/// SQLite encoding of `messages.status` and `messages.direction`, fixed by the stores already
/// on disk. The two agree today, but each may change without the other (a new status gets
/// the next free number in each), so neither is ever read as the other.
extension MessageStatus {
    var abiCode: UInt32 {
        switch self {
        case .pending: return YAOK_MESSAGE_PENDING
        case .sending: return YAOK_MESSAGE_SENDING
        case .sent: return YAOK_MESSAGE_SENT
        case .delivered: return YAOK_MESSAGE_DELIVERED
        case .failed: return YAOK_MESSAGE_FAILED
        }
    }
}

extension MessageDirection {
    var abiCode: UInt32 {
        switch self {
        case .outgoing: return YAOK_DIRECTION_OUTGOING
        case .incoming: return YAOK_DIRECTION_INCOMING
        }
    }
}
