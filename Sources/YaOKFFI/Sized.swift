import YaOK

/// Caller-sized structs (`struct_size` first, include/yaok.h "typed access"): the caller
/// says how large its struct is, and only the fields that fit are written, so a caller
/// built against an older, shorter struct is never overrun when later versions append
/// fields. `minimum` is this version's smallest acceptable size. `struct_size` (the first
/// field) comes back as the bytes written, so a caller built against a later, longer struct
/// can tell which of its fields this library filled in.
func writeSized<T>(_ value: T, to out: UnsafeMutablePointer<T>, structSize: UInt32, minimum: Int, _ name: String) throws {
    try checkStructSize(structSize, minimum: minimum, name)
    let size = Int(structSize)
    var value = value
    withUnsafeBytes(of: &value) { bytes in
        guard let base = bytes.baseAddress else { return }
        let written = min(size, bytes.count)
        UnsafeMutableRawPointer(out).copyMemory(from: base, byteCount: written)
        UnsafeMutableRawPointer(out).storeBytes(of: UInt32(written), as: UInt32.self)
    }
}

/// The caller's `struct_size` (the first field) must cover at least `minimum` bytes.
func checkStructSize(_ structSize: UInt32, minimum: Int, _ name: String) throws {
    guard Int(structSize) >= minimum else {
        throw YaOKError(.invalidArgument, "\(name).struct_size must be set to sizeof(\(name)), got \(structSize)")
    }
}

/// Only `struct_size` (the first field) is read from the caller's struct: `out.pointee`
/// would copy the whole struct, reading past a shorter, older one.
func structSize<C>(_ out: UnsafeMutablePointer<C>) -> UInt32 {
    UnsafeRawPointer(out).load(as: UInt32.self)
}

/// The `get` of a list handle into a caller-sized struct: the list (of kind `type`, named
/// `kind` in messages), the required `out`, then entry `index` (notFound past the end),
/// converted by `make`, written up to the caller's `struct_size`.
func sizedEntry<H: SnapshotList, C>(_ list: OpaquePointer?, _ type: H.Type, _ kind: String, _ index: Int,
                                    _ out: UnsafeMutablePointer<C>?, minimum: Int, _ structName: String,
                                    _ make: (H.Entry) throws -> C) -> Int32 {
    fill({ try Handles.borrow(list, as: type, kind) }, out, "out") { list, out in
        let size = structSize(out)
        try writeSized(try make(try list.entry(index)), to: out, structSize: size, minimum: minimum, structName)
    }
}
