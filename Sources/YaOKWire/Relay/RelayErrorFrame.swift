import YaOKSupport

/// An ERROR frame (docs/PROTOCOL.md §8.3): on request 0 it ends the session, on a request
/// it refuses that request only.
public struct RelayErrorFrame: Equatable, Sendable {
    public enum Code: UInt8, Sendable {
        case malformed = 1, authFailed = 2, revoked = 3, rateLimited = 4, mailboxFull = 5
        case notSubscribed = 6, sessionExpired = 7, unavailable = 8, expired = 9
    }

    /// 0: the session (the relay closes the connection after it).
    public let request: UInt32
    public let code: Code
    /// When to try again (rate limits), else 0.
    public let retryAfterSeconds: UInt32
    public let message: String

    public init(request: UInt32, code: Code, retryAfterSeconds: UInt32 = 0, message: String) {
        self.request = request
        self.code = code
        self.retryAfterSeconds = retryAfterSeconds
        self.message = Self.truncated(message)
    }

    /// The status a client reports for it (§8.3).
    public var status: YaOKError.Code {
        switch code {
        case .malformed: return .malformedPacket
        case .authFailed, .notSubscribed: return .relayAuthFailed
        case .revoked: return .revoked
        case .rateLimited: return .rateLimited
        case .mailboxFull: return .mailboxFull
        case .sessionExpired, .unavailable: return .relayUnavailable
        case .expired: return .expired
        }
    }

    /// Cut to at most `maxErrorMessageBytes` bytes of UTF-8, at a character boundary.
    static func truncated(_ message: String) -> String {
        guard message.utf8.count > RelayFrame.maxErrorMessageBytes else { return message }
        var out = ""
        for c in message {
            guard out.utf8.count + String(c).utf8.count <= RelayFrame.maxErrorMessageBytes else { break }
            out.append(c)
        }
        return out
    }
}
