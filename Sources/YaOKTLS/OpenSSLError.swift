internal import COpenSSL
import YaOKSupport

/// OpenSSL reports failures on a per-thread error queue. One event thread serves many
/// connections, so whatever one of them leaves there would be read as the next one's
/// reason: every failure path drains the queue into its message, and every I/O call
/// starts from an empty queue (SSL_get_error needs that to answer correctly).
enum OpenSSLError {
    /// Empties the queue and returns its reasons, oldest first, without repeats
    /// ("wrong version number; …"); nil when it was already empty.
    static func drain() -> String? {
        var reasons: [String] = []
        while true {
            var data: UnsafePointer<CChar>?
            var flags: Int32 = 0
            let code = ERR_get_error_all(nil, nil, nil, &data, &flags)
            guard code != 0 else { break }
            var reason = ERR_reason_error_string(code).map { String(cString: $0) }
                ?? "OpenSSL error \(String(code, radix: 16))"
            if flags & ERR_TXT_STRING != 0, let data, data.pointee != 0 {
                reason += " (\(String(cString: data)))"
            }
            if !reasons.contains(reason) { reasons.append(reason) }
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }

    /// Empties the queue of what an earlier call left (a success can leave entries too).
    static func clear() {
        ERR_clear_error()
    }

    /// A `YaOKError` whose message is `what`, then OpenSSL's reasons (or `fallback`).
    static func error(_ code: YaOKError.Code, _ what: String, fallback: String? = nil) -> YaOKError {
        if let reasons = drain() ?? fallback {
            return YaOKError(code, "\(what): \(reasons)")
        }
        return YaOKError(code, what)
    }
}
