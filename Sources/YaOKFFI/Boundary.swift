import CYaOK
import Glibc
import YaOK

// The rules every entry point follows (include/yaok.h, "Conventions"):
// validate pointers first, convert, call the core, map the error. No Swift error and no
// trap crosses the boundary: `boundary` catches everything and records the message.

/// Runs `body`; returns YAOK_OK or the failure's YAOK_E_* status, recording its message for
/// yaok_last_error_message() on this thread.
func boundary(_ body: () throws -> Void) -> Int32 {
    do {
        try body()
        return statusOK
    } catch let error as YaOKError {
        LastError.set(error.message)
        return error.code.status
    } catch {
        LastError.set("Internal error: \(error)")
        return YaOKError.Code.internal.status
    }
}

/// Unwraps a required pointer argument or throws `nullArgument` naming it.
func required<T>(_ pointer: T?, _ name: String) throws -> T {
    guard let pointer else { throw YaOKError(.nullArgument, "\(name) must not be NULL") }
    return pointer
}

/// YAOK_MAX_TEXT_BYTES: the longest text argument, in bytes before its NUL.
let maxTextBytes = Int(YAOK_MAX_TEXT_BYTES)

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
    guard strnlen(p, ContactCard.maxTextBytes + 1) <= ContactCard.maxTextBytes else {
        throw YaOKError(.invalidCard, "\(YaOKError(.invalidCard).message): longer than \(ContactCard.maxTextBytes) bytes")
    }
    guard let s = String(validatingCString: p) else { throw YaOKError(.invalidUTF8, "\(name) is not valid UTF-8") }
    return s
}

/// A display name (docs/PROTOCOL.md §1): like `string`, but input over the 4,096 bytes the
/// name rules read is `invalidName` ("refused at once", step 1 of §1, as every defect of a
/// name is), found without reading past the bound; text that is not UTF-8 is `invalidUTF8`.
func nameText(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> String {
    let p = try required(pointer, name)
    guard strnlen(p, DisplayName.maxInputBytes + 1) <= DisplayName.maxInputBytes else {
        throw YaOKError(.invalidName)  // "Name must be 2-50 characters", as the core says
    }
    guard let s = String(validatingCString: p) else { throw YaOKError(.invalidUTF8, "\(name) is not valid UTF-8") }
    return s
}

/// A borrowed NUL-terminated UTF-8 secret (a PIN or passphrase), copied straight into
/// guarded memory: it never becomes a Swift String or array, which could not be wiped.
/// Invalid UTF-8 is refused, checked in place. Longer than `maxTextBytes` it is refused
/// as any text argument is, without reading past the bound: copied whole first, a 64 MiB
/// "PIN" cost 128 MiB of memory before the PIN rules refused it for its length.
func secret(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> SecureBytes {
    let p = try required(pointer, name)
    let length = strnlen(p, maxTextBytes + 1)
    guard length <= maxTextBytes else {
        throw YaOKError(.invalidArgument,
                        "\(name) is longer than \(maxTextBytes) bytes (a PIN or passphrase is at most \(SecretStrength.maximumBytes))")
    }
    let bytes = UnsafeRawBufferPointer(start: p, count: length)
    var iterator = bytes.makeIterator()
    var decoder = UTF8()
    decoding: while true {
        switch decoder.decode(&iterator) {
        case .scalarValue: continue
        case .emptyInput: break decoding
        case .error: throw YaOKError(.invalidUTF8, "\(name) is not valid UTF-8")
        }
    }
    return try SecureBytes(copying: bytes)
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

/// Hands a string to the caller: malloc'd, freed (and wiped) with yaok_string_free.
func give(_ value: String, to out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) throws {
    var value = value
    let p = try value.withUTF8 { utf8 -> UnsafeMutableRawPointer in
        // The length is registered with the allocation, NUL excluded; the NUL is wiped too.
        let p = try Allocations.allocate(utf8.count, extra: 1)
        if let base = utf8.baseAddress { p.copyMemory(from: base, byteCount: utf8.count) }
        p.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
        return p
    }
    out.pointee = p.assumingMemoryBound(to: CChar.self)
}

/// Hands bytes to the caller: malloc'd, freed (and wiped) with yaok_bytes_free.
func give(_ value: [UInt8], to out: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
          length: UnsafeMutablePointer<Int>) throws {
    let p = try Allocations.allocate(value.count, extra: 0)
    value.withUnsafeBytes { if let base = $0.baseAddress { p.copyMemory(from: base, byteCount: value.count) } }
    out.pointee = p.assumingMemoryBound(to: UInt8.self)
    length.pointee = value.count
}

/// Every string and byte buffer handed to the caller and not yet freed, by address, with
/// the number of bytes to wipe when it is freed. The length is kept with the allocation, so
/// yaok_string_free can wipe a string that holds decrypted text, and yaok_bytes_free never
/// trusts the caller's length (a wrong one used to overwrite the heap past the buffer). A
/// pointer not found here — never returned by the library, or already freed — is ignored,
/// as the handle registry ignores foreign handles.
enum Allocations {
    private static let live = Locked([UInt: Int]())

    /// malloc of `count + extra` bytes (at least one, so that success means non-NULL),
    /// registered to wipe `count + extra` bytes.
    static func allocate(_ count: Int, extra: Int) throws -> UnsafeMutableRawPointer {
        let (size, overflow) = count.addingReportingOverflow(extra)
        guard !overflow, let p = malloc(max(size, 1)) else { throw YaOKError(.outOfMemory) }
        live.withLock { $0[UInt(bitPattern: p)] = size }
        return p
    }

    /// Unregisters `pointer`, then wipes and frees it. False (and nothing touched) if it is
    /// not a live allocation of the library.
    /// `release` is Glibc.free; tests pass one that looks at the wiped bytes first.
    @discardableResult
    static func free(_ pointer: UnsafeMutableRawPointer,
                     release: (UnsafeMutableRawPointer) -> Void = { Glibc.free($0) }) -> Bool {
        guard let size = live.withLock({ $0.removeValue(forKey: UInt(bitPattern: pointer)) }) else { return false }
        Secrets.wipe(pointer, size)
        release(pointer)
        return true
    }

    /// How many allocations the caller has not freed yet (tests).
    static var liveCount: Int { live.withLock { $0.count } }
}
