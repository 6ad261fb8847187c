import YaOK

/// Caller-sized structs (`struct_size` first, include/yaok.h "typed access"): the caller
/// says how large its struct is, and only the fields that fit are written, so a caller
/// built against an older, shorter struct is never overrun when later versions append
/// fields. `minimum` is this version's smallest acceptable size. `struct_size` (the first
/// field) comes back as the bytes written, so a caller built against a later, longer struct
/// can tell which of its fields this library filled in.
func writeSized<T>(_ value: T, to out: UnsafeMutablePointer<T>, structSize: UInt32, minimum: Int, _ name: String) throws {
    let size = Int(structSize)
    guard size >= minimum else {
        throw YaOKError(.invalidArgument, "\(name).struct_size must be set to sizeof(\(name)), got \(size)")
    }
    var value = value
    withUnsafeBytes(of: &value) { bytes in
        guard let base = bytes.baseAddress else { return }
        let written = min(size, bytes.count)
        UnsafeMutableRawPointer(out).copyMemory(from: base, byteCount: written)
        UnsafeMutableRawPointer(out).storeBytes(of: UInt32(written), as: UInt32.self)
    }
}
