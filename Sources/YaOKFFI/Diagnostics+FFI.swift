import CYaOK
import YaOK
import YaOKSupport

/* ---- typed access: diagnostics ---- */

/// A snapshot of the node's transports, read from the same JSON yaok_node_diagnostics gives.
final class DiagnosticsHandle: Handle, SnapshotList {
    struct Transport {
        let name: LentString
        let state: UInt32
        let links: UInt32
        let status: LentString
        /// Its connection (yaok_diagnostics_transport_connection).
        let connection: ConnectionCodes
        let detail: LentString?
    }

    let entries: [Transport]
    static let entryName = "transport"
    /// "Internet: Available/Unavailable" (yaok_diagnostics_internet).
    let internetAvailable: Bool
    let defaultRoute: Bool
    let internetLine: LentString

    init(_ diagnostics: JSON) throws {
        var transports: [Transport] = []
        for t in diagnostics["transports"]?.items ?? [] {
            let state: UInt32
            switch t["state"]?.text {
            case "running": state = YAOK_TRANSPORT_RUNNING
            case "failed": state = YAOK_TRANSPORT_FAILED
            default: state = YAOK_TRANSPORT_DISABLED
            }
            let status = t["details"]?["status"]?.text
                ?? (state == YAOK_TRANSPORT_FAILED ? t["error"]?.text ?? "Failed"
                   : (state == YAOK_TRANSPORT_RUNNING ? "Running" : "Disabled"))
            let links = t["links"]?.integer ?? 0
            let connection = t["connection"]
            transports.append(Transport(name: try LentString(t["name"]?.text ?? ""), state: state,
                                        links: UInt32(clamping: links), status: try LentString(status),
                                        connection: ConnectionCodes(json: connection),
                                        detail: try connection?["detail"]?.text.map { try LentString($0) }))
        }
        entries = transports
        let internet = diagnostics["internet"]
        internetAvailable = internet?["available"]?.boolean ?? false
        defaultRoute = internet?["default_route"]?.boolean ?? false
        internetLine = try LentString(internet?["line"]?.text ?? "Internet: Unavailable")
    }
}

/// Reading the library's own JSON values (diagnostics are built as JSON by the core).
extension JSON {
    subscript(key: String) -> JSON? {
        guard case .object(let fields) = self else { return nil }
        return fields.first { $0.0 == key }?.1
    }
    var items: [JSON]? { if case .array(let a) = self { return a } else { return nil } }
    var text: String? { if case .string(let s) = self { return s } else { return nil } }
    var integer: Int64? { if case .int(let i) = self { return i } else { return nil } }
    var boolean: Bool? { if case .bool(let b) = self { return b } else { return nil } }
}

extension DiagnosticsHandle.Transport {
    /// yaok_diagnostics_transport's out-values: name, YAOK_TRANSPORT_*, links, status line.
    var summary: (UnsafePointer<CChar>?, UInt32, UInt32, UnsafePointer<CChar>?) {
        (UnsafePointer(name.pointer), state, links, UnsafePointer(status.pointer))
    }

    /// yaok_diagnostics_transport_connection's out-values: YAOK_CONNECTIVITY_*,
    /// YAOK_DISCONNECT_*, the next retry and the detail (NULL if none).
    var connectionFields: (UInt32, UInt32, Int64, UnsafePointer<CChar>?) {
        (connection.state, connection.reason, connection.nextRetryMs, detail.map { UnsafePointer($0.pointer) })
    }
}

extension DiagnosticsHandle {
    /// yaok_diagnostics_internet's out-values: available, default route, the line.
    var internet: (Int32, Int32, UnsafePointer<CChar>?) {
        (internetAvailable ? 1 : 0, defaultRoute ? 1 : 0, UnsafePointer(internetLine.pointer))
    }
}

func diagnostics(_ pointer: OpaquePointer?) throws -> DiagnosticsHandle {
    try Handles.borrow(pointer, as: DiagnosticsHandle.self, "diagnostics")
}

@c @implementation
public func yaok_diagnostics_new(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in try DiagnosticsHandle(try n.diagnostics()) }
}

@c @implementation
public func yaok_diagnostics_free(_ d: OpaquePointer?) { Handles.release(d, as: DiagnosticsHandle.self) }

@c @implementation
public func yaok_diagnostics_transport_count(_ d: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> Int32 {
    listCount(d, DiagnosticsHandle.self, "diagnostics", out)
}

@c @implementation
public func yaok_diagnostics_transport(_ d: OpaquePointer?, _ index: Int, _ outName: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                       _ outState: UnsafeMutablePointer<UInt32>?, _ outLinks: UnsafeMutablePointer<UInt32>?,
                                       _ outStatus: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    fillValues({ try diagnostics(d) }, (outName, "out_name"), (outState, "out_state"), (outLinks, "out_links"),
               (outStatus, "out_status")) { d in try d.entry(index).summary }
}
