/// Every failure the core reports: a stable code (the same number as the C ABI's
/// `yaok_status`, so the FFI layer passes it through unchanged) and a message a person can read.
public struct YaOKError: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String? = nil) {
        self.code = code
        self.message = message ?? code.defaultMessage
    }

    public var description: String { message }

    /// Two errors are equal when their codes are: the message is detail for people
    /// (it may carry a name or a count of seconds), the code is what programs act on.
    public static func == (a: YaOKError, b: YaOKError) -> Bool { a.code == b.code }

    /// Grouped in ranges of 100 and never renumbered; a retired code stays as a comment.
    /// Keep in step with `yaok_status` in include/yaok.h (a test compares them).
    public enum Code: Int32, Sendable, CaseIterable {
        // 1xx: the caller's arguments
        case nullArgument = 100
        case invalidArgument = 101
        case invalidUTF8 = 102
        case bufferTooSmall = 103

        // 2xx: identity and contacts
        case invalidName = 200
        case invalidCard = 201
        case contactExists = 202
        case notFound = 203

        // 3xx: message crypto
        case notForMe = 300
        case tampered = 301
        case unknownSender = 302
        case senderAuthFailed = 303
        case messageTooLarge = 304
        case emptyMessage = 305
        case malformedEnvelope = 306

        // 4xx: app lock and storage
        case locked = 400
        case wrongPIN = 401
        case lockedOut = 402
        case pinTooShort = 403
        case pinMismatch = 404
        case storage = 405
        case diskFull = 406
        case corruptStore = 407
        case confirmationRequired = 408
        case notInitialized = 409
        case alreadyInitialized = 410
        case noPlatformKey = 411
        case wrongPlatformKey = 412
        case closed = 413
        case busy = 414
        case alreadyUnlocked = 415
        case deviceSecretRequired = 416
        case wrongDeviceSecret = 417

        // 5xx: wire protocol
        case malformedPacket = 500
        case unsupportedVersion = 501
        case unknownPacketType = 502
        case frameTooLarge = 503
        case fragmentInvalid = 504
        case expired = 505
        case linkFailed = 506
        case noRoute = 507

        // 6xx: relays
        case tlsFailed = 600
        case certificateRejected = 601
        case relayAuthFailed = 602
        case revoked = 603
        case rateLimited = 604
        case mailboxFull = 605
        case relayUnavailable = 606

        // 9xx: the library itself
        case `internal` = 900
        case outOfMemory = 901
        case cryptoInit = 902

        public var defaultMessage: String {
            switch self {
            case .nullArgument: return "A required argument was NULL"
            case .invalidArgument: return "Invalid argument"
            case .invalidUTF8: return "Text is not valid UTF-8"
            case .bufferTooSmall: return "Buffer too small"
            case .invalidName: return "Name must be 2-50 characters"
            case .invalidCard: return "Invalid Ya OK QR code"
            case .contactExists: return "Contact is already in your contacts"
            case .notFound: return "Not found"
            case .notForMe: return "Message is not addressed to this identity"
            case .tampered: return "Message failed authentication (tampered or corrupted)"
            case .unknownSender: return "Message is from an unknown sender"
            case .senderAuthFailed: return "Sender authentication failed"
            case .messageTooLarge: return "Message too large (max 10KB)"
            case .emptyMessage: return "Message is empty"
            case .malformedEnvelope: return "Malformed envelope"
            case .locked: return "Locked: unlock with the PIN first"
            case .wrongPIN: return "Incorrect PIN"
            case .lockedOut: return "Too many attempts. Try again later."
            case .pinTooShort: return "PIN must be at least 6 digits"
            case .pinMismatch: return "PINs do not match"
            case .storage: return "Storage error"
            case .diskFull: return "Not enough storage space"
            case .corruptStore: return "The data store is corrupt"
            case .confirmationRequired: return "This action needs explicit confirmation"
            case .notInitialized: return "No identity has been set up here"
            case .alreadyInitialized: return "An identity already exists here"
            case .noPlatformKey: return "No platform key is registered"
            case .wrongPlatformKey: return "Incorrect platform key"
            case .closed: return "Closed: the node or the link was closed"
            case .busy: return "This data directory is already open in another Ya OK node"
            case .alreadyUnlocked: return "Already unlocked"
            case .deviceSecretRequired: return "This vault is bound to a device secret: set it before unlocking"
            case .wrongDeviceSecret: return "The device secret does not match this vault"
            case .malformedPacket: return "Malformed packet"
            case .unsupportedVersion: return "Unsupported protocol version"
            case .unknownPacketType: return "Unknown packet type"
            case .frameTooLarge: return "Frame too large"
            case .fragmentInvalid: return "Invalid fragment"
            case .expired: return "Packet has expired"
            case .linkFailed: return "The link failed"
            case .noRoute: return "No transports enabled"
            case .tlsFailed: return "The TLS connection failed"
            case .certificateRejected: return "The relay's certificate was rejected"
            case .relayAuthFailed: return "The relay refused authentication"
            case .revoked: return "The relay revoked this account"
            case .rateLimited: return "Rate limit reached. Try again later."
            case .mailboxFull: return "The recipient's relay mailbox is full"
            case .relayUnavailable: return "The relay is unavailable"
            case .internal: return "Internal error"
            case .outOfMemory: return "Out of memory"
            case .cryptoInit: return "The crypto library failed to initialise"
            }
        }
    }
}
