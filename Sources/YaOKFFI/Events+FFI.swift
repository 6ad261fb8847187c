import CYaOK
import Glibc
import YaOK

/* ---- node events and the security log ---- */

// yaok_event, yaok_event_callback and yaok_free_callback come from include/yaok.h (the
// CYaOK module), so their layout and calling convention are the header's own.

/// One C callback registration. `@unchecked Sendable`: its fields never change, and the
/// node only uses it on its event thread (calls, and the release that runs free_user_data);
/// the application promised, by registering, that user_data may be used there.
final class CallbackRegistration: @unchecked Sendable {
    let callback: yaok_event_callback
    let userData: UnsafeMutableRawPointer?
    let freeUserData: yaok_free_callback?

    init(_ callback: @escaping yaok_event_callback, _ userData: UnsafeMutableRawPointer?,
         _ freeUserData: yaok_free_callback?) {
        self.callback = callback
        self.userData = userData
        self.freeUserData = freeUserData
    }

    deinit { freeUserData?(userData) }

    /// Calls back with a `yaok_event` that is valid for the call only; while the call lasts
    /// it is a live event, so the typed getters (yaok_event_*) can read its fields.
    func deliver(_ event: NodeEvent) {
        let view = EventView(event)
        event.json.serialized.withCString { json in
            var cEvent = yaok_event(kind: event.abiKind, json: json)
            withUnsafePointer(to: &cEvent) { pointer in
                LiveEvents.begin(pointer, view)
                defer { LiveEvents.end(pointer) }
                callback(userData, pointer)
            }
        }
    }
}

@c @implementation
public func yaok_node_set_event_callback(_ node: OpaquePointer?, _ callback: yaok_event_callback?,
                                         _ userData: UnsafeMutableRawPointer?, _ freeUserData: yaok_free_callback?) -> Int32 {
    withNode(node) { n in n.setEventHandler(eventHandler(callback, userData, freeUserData)) }
}

/// The node's handler for a C callback (nil: none; free_user_data is not called then).
private func eventHandler(_ callback: yaok_event_callback?, _ userData: UnsafeMutableRawPointer?,
                          _ freeUserData: yaok_free_callback?) -> (@Sendable (NodeEvent) -> Void)? {
    guard let callback else { return nil }
    let registration = CallbackRegistration(callback, userData, freeUserData)
    return { registration.deliver($0) }
}

@c @implementation
public func yaok_security_events(_ node: OpaquePointer?, _ beforeID: Int64, _ limit: UInt32,
                                 _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in JSON.array(try n.securityEvents(limit: Int(limit), before: try beforeEventID(beforeID)).map(\.json)) }
}

/// before_id: 0 for the newest page, else the ID to read before.
private func beforeEventID(_ beforeID: Int64) throws -> Int64? {
    guard beforeID >= 0 else { throw YaOKError(.invalidArgument, "before_id must not be negative") }
    return beforeID == 0 ? nil : beforeID
}
