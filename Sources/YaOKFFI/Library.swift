import CYaOK
import Glibc
import YaOK

/* ---- library: versions, status, memory ---- */

@c @implementation
public func yaok_abi_version() -> UInt32 { Version.abi }

// Optional only because the header's `const char *` carries no nullability: never NULL.
@c @implementation
public func yaok_version_string() -> UnsafePointer<CChar>? { VersionString.pointer }

@c @implementation
public func yaok_status_str(_ status: Int32) -> UnsafePointer<CChar>? { StatusStrings.pointer(for: status) }

@c @implementation
public func yaok_last_error_message() -> UnsafePointer<CChar>? { LastError.current }

@c @implementation
public func yaok_string_free(_ s: UnsafeMutablePointer<CChar>?) {
    // Returned strings may hold decrypted text (message JSON, history): wiped, then freed.
    guard let s else { return }
    Allocations.free(UnsafeMutableRawPointer(s))
}

@c @implementation
public func yaok_bytes_free(_ data: UnsafeMutablePointer<UInt8>?, _ length: Int) {
    // Returned bytes may be a decrypted message: wiped, then freed. The length wiped is the
    // one recorded with the allocation; the caller's `length` is not trusted (a wrong one
    // must not make the wipe run past the buffer).
    _ = length
    guard let data else { return }
    Allocations.free(UnsafeMutableRawPointer(data))
}

/// Static C strings that live as long as the process. `nonisolated(unsafe)`: they are
/// written once by the thread-safe lazy initialiser and only read after that.
enum VersionString {
    nonisolated(unsafe) static let pointer = immortal(Version.string)
}

enum StatusStrings {
    nonisolated(unsafe) private static let table: [Int32: UnsafePointer<CChar>] = {
        var t: [Int32: UnsafePointer<CChar>] = [statusOK: immortal("OK")]
        for code in YaOKError.Code.allCases { t[code.status] = immortal(code.defaultMessage) }
        return t
    }()
    nonisolated(unsafe) private static let unknown = immortal("Unknown status")

    static func pointer(for status: Int32) -> UnsafePointer<CChar> { table[status] ?? unknown }
}

/// A C copy of `text` that is never freed. Should even that allocation fail, the empty
/// string literal (static storage) stands in: these functions must never return NULL.
private func immortal(_ text: String) -> UnsafePointer<CChar> {
    if let copy = strdup(text) { return UnsafePointer(copy) }
    return UnsafeRawPointer(("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}
