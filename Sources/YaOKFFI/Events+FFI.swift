import Glibc
import YaOK

/* ---- node events and the security log ---- */

public typealias CEventCallback = @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?) -> Void
public typealias CFreeCallback = @convention(c) (UnsafeMutableRawPointer?) -> Void

/// One C callback registration. `@unchecked Sendable`: its fields never change, and the
/// node only uses it on its event thread (calls, and the release that runs free_user_data);
/// the application promised, by registering, that user_data may be used there.
final class CallbackRegistration: @unchecked Sendable {
    let callback: CEventCallback
    let userData: UnsafeMutableRawPointer?
    let freeUserData: CFreeCallback?

    init(_ callback: CEventCallback, _ userData: UnsafeMutableRawPointer?, _ freeUserData: CFreeCallback?) {
        self.callback = callback
        self.userData = userData
        self.freeUserData = freeUserData
    }

    deinit { freeUserData?(userData) }

    /// Builds a `yaok_event` { uint32_t kind; const char *json; } with C layout, valid for
    /// the call only.
    func deliver(_ event: NodeEvent) {
        let jsonOffset = max(MemoryLayout<UInt32>.size, MemoryLayout<UnsafeRawPointer>.alignment)
        let size = jsonOffset + MemoryLayout<UnsafeRawPointer>.size
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        defer { raw.deallocate() }
        event.json.serialized.withCString { json in
            raw.storeBytes(of: event.kind, as: UInt32.self)
            raw.storeBytes(of: UnsafeRawPointer(json), toByteOffset: jsonOffset, as: UnsafeRawPointer.self)
            callback(userData, UnsafeRawPointer(raw))
        }
    }
}

@_cdecl("yaok_node_set_event_callback")
public func yaok_node_set_event_callback(_ node: OpaquePointer?, _ callback: CEventCallback?,
                                         _ userData: UnsafeMutableRawPointer?, _ freeUserData: CFreeCallback?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        guard let callback else {
            n.setEventHandler(nil)
            return
        }
        let registration = CallbackRegistration(callback, userData, freeUserData)
        n.setEventHandler { registration.deliver($0) }
    }
}

@_cdecl("yaok_security_events")
public func yaok_security_events(_ node: OpaquePointer?, _ beforeID: Int64, _ limit: UInt32,
                                 _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out_json")
        guard beforeID >= 0 else { throw YaOKError(.invalidArgument, "before_id must not be negative") }
        let events = try n.securityEvents(limit: Int(limit), before: beforeID == 0 ? nil : beforeID)
        try give(JSON.array(events.map(\.json)).serialized, to: out)
    }
}
