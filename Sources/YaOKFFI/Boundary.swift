import Glibc
import YaOK

// The rules every entry point follows (include/yaok.h, "Conventions"):
// validate pointers first, convert, call the core, map the error. No Swift error and no
// trap crosses the boundary: `boundary` catches everything and records the message.

/// Runs `body`; returns YAOK_OK (0) or the failure's status, recording its message for
/// yaok_last_error_message() on this thread.
func boundary(_ body: () throws -> Void) -> Int32 {
    do {
        try body()
        return 0
    } catch let error as YaOKError {
        LastError.set(error.message)
        return error.code.rawValue
    } catch {
        LastError.set("Internal error: \(error)")
        return YaOKError.Code.internal.rawValue
    }
}

/// Unwraps a required pointer argument or throws `nullArgument` naming it.
func required<T>(_ pointer: T?, _ name: String) throws -> T {
    guard let pointer else { throw YaOKError(.nullArgument, "\(name) must not be NULL") }
    return pointer
}

/// YAOK_MAX_TEXT_BYTES: the longest text argument, in bytes before its NUL.
let maxTextBytes = 4096

/// A borrowed NUL-terminated UTF-8 argument of at most `maxTextBytes` bytes. Longer text
/// is refused (`invalidArgument`) without reading past the bound; invalid UTF-8 is refused
/// (`invalidUTF8`), never repaired.
func string(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> String {
    let p = try required(pointer, name)
    guard strnlen(p, maxTextBytes + 1) <= maxTextBytes else {
        throw YaOKError(.invalidArgument, "\(name) is longer than \(maxTextBytes) bytes")
    }
    guard let s = String(validatingCString: p) else { throw YaOKError(.invalidUTF8, "\(name) is not valid UTF-8") }
    return s
}

/// Card text: like `string`, but text too long to be a card is `invalidCard` ("Invalid Ya
/// OK QR code", as every defect of a card is); text that is not UTF-8 is `invalidUTF8`.
func cardText(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> String {
    let p = try required(pointer, name)
    guard strnlen(p, ContactCard.maxTextBytes + 1) <= ContactCard.maxTextBytes else { throw YaOKError(.invalidCard) }
    guard let s = String(validatingCString: p) else { throw YaOKError(.invalidUTF8, "\(name) is not valid UTF-8") }
    return s
}

/// A borrowed (pointer, length) argument. NULL is allowed only for length 0.
func bytes(_ pointer: UnsafePointer<UInt8>?, _ count: Int, _ name: String) throws -> [UInt8] {
    // size_t arrives as Int: a length above Int.max shows up negative.
    guard count >= 0 else { throw YaOKError(.invalidArgument, "\(name) length is too large") }
    guard count > 0 else { return [] }
    let p = try required(pointer, name)
    return Array(UnsafeBufferPointer(start: p, count: count))
}

/// A borrowed fixed-size argument, e.g. a 16-byte message ID.
func fixedBytes(_ pointer: UnsafePointer<UInt8>?, _ count: Int, _ name: String) throws -> [UInt8] {
    Array(UnsafeBufferPointer(start: try required(pointer, name), count: count))
}

/// Hands a string to the caller: malloc'd, freed with yaok_string_free.
func give(_ value: String, to out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) throws {
    guard let copy = strdup(value) else { throw YaOKError(.outOfMemory) }
    out.pointee = copy
}

/// Hands bytes to the caller: malloc'd, freed with yaok_bytes_free.
func give(_ value: [UInt8], to out: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
          length: UnsafeMutablePointer<Int>) throws {
    // malloc(0) may return NULL; always allocate at least one byte so success means non-NULL.
    guard let raw = malloc(max(value.count, 1)) else { throw YaOKError(.outOfMemory) }
    let p = raw.bindMemory(to: UInt8.self, capacity: max(value.count, 1))
    value.withUnsafeBufferPointer { if let base = $0.baseAddress { p.update(from: base, count: value.count) } }
    out.pointee = p
    length.pointee = value.count
}
