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

/// The `get` of a list handle into a caller-sized struct: the list (of kind `type`, named
/// `kind` in messages), the required `out`, then the struct `make` builds from the list and
/// the caller's `struct_size` (`make` checks the index), written up to that size.
/// Only `struct_size` (the first field) is read from the caller's struct: `out.pointee`
/// would copy the whole struct, reading past a shorter, older one.
func sizedEntry<H: Handle, C>(_ list: OpaquePointer?, _ type: H.Type, _ kind: String, _ out: UnsafeMutablePointer<C>?,
                              minimum: Int, _ structName: String, _ make: (H, UInt32) throws -> C) -> Int32 {
    fill({ try Handles.borrow(list, as: type, kind) }, out, "out") { list, out in
        let structSize = UnsafeRawPointer(out).load(as: UInt32.self)
        try writeSized(try make(list, structSize), to: out, structSize: structSize, minimum: minimum, structName)
    }
}
