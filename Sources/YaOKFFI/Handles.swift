import YaOK

/// Opaque handles are retained Swift objects. Every handle class derives from `Handle`
/// so a pointer of the wrong kind is refused with an error instead of misread.
class Handle {}

enum Handles {
    static func make(_ object: Handle) -> OpaquePointer {
        OpaquePointer(Unmanaged.passRetained(object).toOpaque())
    }

    /// Borrows the object behind `pointer`; `invalidArgument` if it is of another kind.
    static func borrow<T: Handle>(_ pointer: OpaquePointer?, as type: T.Type, _ name: String) throws -> T {
        let raw = UnsafeRawPointer(try required(pointer, name))
        guard let object = Unmanaged<Handle>.fromOpaque(raw).takeUnretainedValue() as? T else {
            throw YaOKError(.invalidArgument, "\(name) is not a \(T.self) handle")
        }
        return object
    }

    /// Releases a handle; NULL is a no-op.
    static func release(_ pointer: OpaquePointer?) {
        guard let pointer else { return }
        Unmanaged<Handle>.fromOpaque(UnsafeRawPointer(pointer)).release()
    }
}
