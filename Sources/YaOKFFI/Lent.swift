import Glibc
import YaOK

/// A NUL-terminated copy of a string that a typed handle (or a live event) owns and lends
/// to the caller as `const char *` for its own lifetime; wiped and freed with it (a message
/// text or a contact name is private). Never registered with `Allocations`: the caller must
/// not free it, and yaok_string_free ignores it.
final class LentString: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<CChar>
    /// Bytes before the NUL.
    let count: Int

    init(_ value: String) throws {
        var value = value
        let (count, p) = try value.withUTF8 { utf8 -> (Int, UnsafeMutableRawPointer) in
            guard let p = malloc(utf8.count + 1) else { throw YaOKError(.outOfMemory) }
            if let base = utf8.baseAddress { p.copyMemory(from: base, byteCount: utf8.count) }
            p.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
            return (utf8.count, p)
        }
        self.count = count
        self.pointer = p.assumingMemoryBound(to: CChar.self)
    }

    deinit {
        Secrets.wipe(UnsafeMutableRawPointer(pointer), count + 1)
        free(pointer)
    }

    /// Lends the string through a `const char **` out-pointer.
    func lend(to out: UnsafeMutablePointer<UnsafePointer<CChar>?>) {
        out.pointee = UnsafePointer(pointer)
    }
}

/// Copies a message ID into the caller's YAOK_MESSAGE_ID_BYTES buffer.
func copyMessageID(_ id: MessageID, to out: UnsafeMutablePointer<UInt8>) {
    for (i, b) in id.bytes.enumerated() { out[i] = b }
}

/// "field" is not part of this event kind / message / contact: `notFound`.
func absent(_ field: String, _ owner: String) -> YaOKError {
    YaOKError(.notFound, "\(owner) has no \(field)")
}
