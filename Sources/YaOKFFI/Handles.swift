import YaOK

/// Opaque handles are retained Swift objects. Every handle class derives from `Handle`
/// so a pointer of the wrong kind is refused with an error instead of misread.
class Handle {}

/// Every handle the library has handed out and not yet freed, by address, so that a pointer
/// that is not one (a freed handle, a double free, any other pointer cast to a handle type)
/// is refused before it is dereferenced: the header promises that invalid arguments return
/// an error and never crash. Only a handle's address is stored, never dereferenced until
/// it is found here. (A freed handle whose address a new handle of the same type reuses
/// cannot be told apart: that is the caller's use-after-free, as with any C API.)
enum Handles {
    private static let live = Locked(Set<UInt>())

    static func make(_ object: Handle) -> OpaquePointer {
        let raw = Unmanaged.passRetained(object).toOpaque()
        live.withLock { _ = $0.insert(UInt(bitPattern: raw)) }
        return OpaquePointer(raw)
    }

    /// Borrows the object behind `pointer`; `invalidArgument` if it is not a live handle or
    /// is of another kind. The returned reference keeps the object alive for the call even
    /// if another thread frees the handle meanwhile.
    static func borrow<T: Handle>(_ pointer: OpaquePointer?, as type: T.Type, _ name: String) throws -> T {
        let raw = UnsafeRawPointer(try required(pointer, name))
        // Taken under the lock: a concurrent _free cannot release it between lookup and retain.
        let object: Handle? = live.withLock { handles in
            handles.contains(UInt(bitPattern: raw)) ? Unmanaged<Handle>.fromOpaque(raw).takeUnretainedValue() : nil
        }
        guard let object else {
            throw YaOKError(.invalidArgument, "\(name) is not a live handle (already freed, or not made by the library)")
        }
        guard let typed = object as? T else {
            throw YaOKError(.invalidArgument, "\(name) is a \(cName(Swift.type(of: object))), not a \(cName(T.self))")
        }
        return typed
    }

    /// The header's name of a handle type: a C caller knows `yaok_link_list`, not the
    /// class behind it.
    static func cName(_ type: Handle.Type) -> String {
        switch type {
        case is NodeHandle.Type: return "yaok_node"
        case is IdentityHandle.Type: return "yaok_identity"
        case is CardHandle.Type: return "yaok_card"
        case is LinkHandle.Type: return "yaok_link"
        case is MessageHandle.Type: return "yaok_message"
        case is ContactHandle.Type: return "yaok_contact"
        case is DiagnosticsHandle.Type: return "yaok_diagnostics"
        case is HistoryHandle.Type: return "yaok_history"
        case is OutboxHandle.Type: return "yaok_outbox_list"
        case is LinkListHandle.Type: return "yaok_link_list"
        default: return "handle of another kind"
        }
    }

    /// Ends a handle of type `T` and returns its object (the caller's reference is then the
    /// last one the library holds). NULL, a handle already freed, or one of another type:
    /// nil, and nothing changes.
    static func take<T: Handle>(_ pointer: OpaquePointer?, as type: T.Type) -> T? {
        guard let pointer else { return nil }
        let raw = UnsafeRawPointer(pointer)
        return live.withLock { handles -> T? in
            guard handles.contains(UInt(bitPattern: raw)),
                  let object = Unmanaged<Handle>.fromOpaque(raw).takeUnretainedValue() as? T else { return nil }
            handles.remove(UInt(bitPattern: raw))
            Unmanaged<Handle>.fromOpaque(raw).release()  // the handle's own +1; `object` keeps it alive
            return object
        }
    }

    /// Releases a handle of type `T`; NULL, a freed handle or another type is a no-op.
    static func release<T: Handle>(_ pointer: OpaquePointer?, as type: T.Type) {
        _ = take(pointer, as: type)
    }
}
