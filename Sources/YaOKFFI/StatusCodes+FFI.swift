import CYaOK
import YaOK

/* ---- status: the ABI's numbers ---- */

/// YAOK_E_* of include/yaok.h, the one place an error's code gets its C status. The core's
/// raw values are the CLI's (its control socket and JSON output give them), which agree
/// with the header today; neither is ever read as the other here, so the C numbers come
/// from the header alone, and StatusCodesTests pins that every code maps to a distinct
/// header constant and back.
extension YaOKError.Code {
    /// The header's status for this code.
    var status: yaok_status { yaok_status(statusConstant) }

    private var statusConstant: Int {
        switch self {
        case .nullArgument: return YAOK_E_NULL_ARGUMENT
        case .invalidArgument: return YAOK_E_INVALID_ARGUMENT
        case .invalidUTF8: return YAOK_E_INVALID_UTF8
        case .bufferTooSmall: return YAOK_E_BUFFER_TOO_SMALL
        case .invalidName: return YAOK_E_INVALID_NAME
        case .invalidCard: return YAOK_E_INVALID_CARD
        case .contactExists: return YAOK_E_CONTACT_EXISTS
        case .notFound: return YAOK_E_NOT_FOUND
        case .notForMe: return YAOK_E_NOT_FOR_ME
        case .tampered: return YAOK_E_TAMPERED
        case .unknownSender: return YAOK_E_UNKNOWN_SENDER
        case .senderAuthFailed: return YAOK_E_SENDER_AUTH_FAILED
        case .messageTooLarge: return YAOK_E_MESSAGE_TOO_LARGE
        case .emptyMessage: return YAOK_E_EMPTY_MESSAGE
        case .malformedEnvelope: return YAOK_E_MALFORMED_ENVELOPE
        case .locked: return YAOK_E_LOCKED
        case .wrongPIN: return YAOK_E_WRONG_PIN
        case .lockedOut: return YAOK_E_LOCKED_OUT
        case .pinTooShort: return YAOK_E_PIN_TOO_SHORT
        case .pinMismatch: return YAOK_E_PIN_MISMATCH
        case .storage: return YAOK_E_STORAGE
        case .diskFull: return YAOK_E_DISK_FULL
        case .corruptStore: return YAOK_E_CORRUPT_STORE
        case .confirmationRequired: return YAOK_E_CONFIRMATION_REQUIRED
        case .notInitialized: return YAOK_E_NOT_INITIALIZED
        case .alreadyInitialized: return YAOK_E_ALREADY_INITIALIZED
        case .noPlatformKey: return YAOK_E_NO_PLATFORM_KEY
        case .wrongPlatformKey: return YAOK_E_WRONG_PLATFORM_KEY
        case .closed: return YAOK_E_CLOSED
        case .busy: return YAOK_E_BUSY
        case .alreadyUnlocked: return YAOK_E_ALREADY_UNLOCKED
        case .deviceSecretRequired: return YAOK_E_DEVICE_SECRET_REQUIRED
        case .wrongDeviceSecret: return YAOK_E_WRONG_DEVICE_SECRET
        case .malformedPacket: return YAOK_E_MALFORMED_PACKET
        case .unsupportedVersion: return YAOK_E_UNSUPPORTED_VERSION
        case .unknownPacketType: return YAOK_E_UNKNOWN_PACKET_TYPE
        case .frameTooLarge: return YAOK_E_FRAME_TOO_LARGE
        case .fragmentInvalid: return YAOK_E_FRAGMENT_INVALID
        case .expired: return YAOK_E_EXPIRED
        case .linkFailed: return YAOK_E_LINK_FAILED
        case .noRoute: return YAOK_E_NO_ROUTE
        case .tlsFailed: return YAOK_E_TLS_FAILED
        case .certificateRejected: return YAOK_E_CERTIFICATE_REJECTED
        case .relayAuthFailed: return YAOK_E_RELAY_AUTH_FAILED
        case .revoked: return YAOK_E_REVOKED
        case .rateLimited: return YAOK_E_RATE_LIMITED
        case .mailboxFull: return YAOK_E_MAILBOX_FULL
        case .relayUnavailable: return YAOK_E_RELAY_UNAVAILABLE
        case .`internal`: return YAOK_E_INTERNAL
        case .outOfMemory: return YAOK_E_OUT_OF_MEMORY
        case .cryptoInit: return YAOK_E_CRYPTO_INIT
        }
    }

    /// The code a status names (nil for YAOK_OK and for numbers the header does not name).
    init?(status: yaok_status) {
        guard let code = Self.allCases.first(where: { $0.status == status }) else { return nil }
        self = code
    }
}

/// YAOK_OK
let statusOK = yaok_status(YAOK_OK)

/* ---- warnings: the ABI's bits ---- */

extension Warnings {
    /// Each warning with its YAOK_WARNING_* bit (the core's own bits are not the ABI's).
    static let abiBits: [(Warnings, UInt32)] = [(.allZeroPIN, YAOK_WARNING_ALL_ZERO_PIN),
                                                (.autoLockDisabled, YAOK_WARNING_AUTO_LOCK_DISABLED)]

    /// The YAOK_WARNING_* bits of these warnings.
    var abiCode: UInt32 {
        Self.abiBits.reduce(0) { bits, pair in contains(pair.0) ? bits | pair.1 : bits }
    }
}
