import CYaOK
import YaOK

/* ---- links ---- */

// yaok_link_send_callback, yaok_link_closed_callback and yaok_free_callback come from
// include/yaok.h (the CYaOK module).

/// YAOK_LINK_INITIATOR / YAOK_LINK_RESPONDER
let linkInitiator: UInt32 = 0, linkResponder: UInt32 = 1

/// `YAOK_LINK_INITIATOR` / `YAOK_LINK_RESPONDER` as the one role type.
func linkRole(_ value: UInt32) throws -> Link.Role {
    switch value {
    case linkInitiator: return .initiator
    case linkResponder: return .responder
    default: throw YaOKError(.invalidArgument, "Unknown role \(value)")
    }
}

/// The application's callbacks for one link. `@unchecked Sendable`: `send`, `closedCallback`
/// and `userData` never change, the rest is guarded by a lock; the application promised, by
/// opening the link, that user_data may be used on the threads the header names.
/// free_user_data runs exactly once, when the link is closed (by the node or by
/// yaok_link_close) and no callback is running: by whichever of the two finishes last.
final class LinkCallbacks: @unchecked Sendable {
    let send: yaok_link_send_callback
    let closedCallback: yaok_link_closed_callback?
    let userData: UnsafeMutableRawPointer?
    fileprivate struct State {
        var closed = false
        var running = 0
        /// Set once the link is open: a failed yaok_link_open must not free user_data.
        var free: yaok_free_callback?
    }
    private let state = Locked(State())

    init(send: @escaping yaok_link_send_callback, closed: yaok_link_closed_callback?,
         userData: UnsafeMutableRawPointer?) {
        self.send = send
        self.closedCallback = closed
        self.userData = userData
    }

    /// A safety net: the node dropped the link without closing it.
    deinit { state.withLock { $0.free }?(userData) }

    func arm(_ free: yaok_free_callback?) { state.withLock { $0.free = free } }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Marks the link closed (true if it was open) and frees user_data if nothing runs.
    @discardableResult
    func close() -> Bool {
        let (wasOpen, free) = state.withLock { s -> (Bool, yaok_free_callback?) in
            defer { s.closed = true }
            return (!s.closed, s.running == 0 ? s.take() : nil)
        }
        free?(userData)
        return wasOpen
    }

    /// Runs `body` unless the link is closed, holding off free_user_data until it returns.
    private func calling(_ body: () -> Void) {
        guard state.withLock({ s -> Bool in
            guard !s.closed else { return false }
            s.running += 1
            return true
        }) else { return }
        body()
        let free = state.withLock { s -> yaok_free_callback? in
            s.running -= 1
            return s.closed && s.running == 0 ? s.take() : nil
        }
        free?(userData)
    }

    /// One unit to the application, borrowed for the call. Nothing after a close.
    func transmit(_ unit: [UInt8]) {
        calling { unit.withUnsafeBufferPointer { _ = send(userData, $0.baseAddress, $0.count) } }
    }

    /// The node ended the link: tell the application (unless it closed the link itself).
    func closedByNode(_ reason: String) {
        let wasOpen = state.withLock { s -> Bool in
            defer { s.closed = true }
            if !s.closed { s.running += 1 }
            return !s.closed
        }
        guard wasOpen else { return }
        if let closedCallback { reason.withCString { closedCallback(userData, $0) } }
        let free = state.withLock { s -> yaok_free_callback? in
            s.running -= 1
            return s.running == 0 ? s.take() : nil
        }
        free?(userData)
    }
}

private extension LinkCallbacks.State {
    /// The free callback, once.
    mutating func take() -> yaok_free_callback? {
        defer { free = nil }
        return free
    }
}

/// A link handle. The node owns the `Link` while it is open; the handle only watches it,
/// so a link the node closed is released (and free_user_data runs) without waiting for
/// yaok_link_close.
final class LinkHandle: Handle, @unchecked Sendable {
    weak var link: Link?
    let callbacks: LinkCallbacks
    init(_ link: Link, _ callbacks: LinkCallbacks) {
        self.link = link
        self.callbacks = callbacks
    }
}

@_cdecl("yaok_link_open")
public func yaok_link_open(_ node: OpaquePointer?, _ transport: UnsafePointer<CChar>?, _ role: UInt32, _ mtu: UInt32,
                           _ send: yaok_link_send_callback?, _ closed: yaok_link_closed_callback?,
                           _ userData: UnsafeMutableRawPointer?, _ freeUserData: yaok_free_callback?,
                           _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out")
        let send = try required(send, "send")
        let name = try string(transport, "transport")
        let callbacks = LinkCallbacks(send: send, closed: closed, userData: userData)
        let link = try n.openLink(transport: name, role: try linkRole(role), mtu: Int(mtu),
                                  send: { callbacks.transmit($0) }, closed: { callbacks.closedByNode($0) })
        callbacks.arm(freeUserData)
        out.pointee = Handles.make(LinkHandle(link, callbacks))
    }
}

@_cdecl("yaok_link_receive")
public func yaok_link_receive(_ link: OpaquePointer?, _ unit: UnsafePointer<UInt8>?, _ unitLength: Int) -> Int32 {
    boundary {
        let handle = try Handles.borrow(link, as: LinkHandle.self, "link")
        let bytes = try YaOKFFI.bytes(unit, unitLength, "unit")
        guard let l = handle.link, !handle.callbacks.isClosed else { throw YaOKError(.closed, "The link is closed") }
        guard l.receive(bytes) else {
            throw YaOKError(.linkFailed, "The unit was refused: the link is closed or sent faster than it is processed")
        }
    }
}

/// YAOK_LINK_PEER_*
private let peerUnknown: UInt32 = 0, peerContact: UInt32 = 1, peerStranger: UInt32 = 2

@_cdecl("yaok_link_peer")
public func yaok_link_peer(_ link: OpaquePointer?, _ outAuthenticated: UnsafeMutablePointer<Int32>?,
                           _ outPeer: UnsafeMutablePointer<UInt32>?) -> Int32 {
    boundary {
        let handle = try Handles.borrow(link, as: LinkHandle.self, "link")
        let authenticatedOut = try required(outAuthenticated, "out_authenticated")
        let peerOut = try required(outPeer, "out_peer")
        guard let l = handle.link, !handle.callbacks.isClosed else { throw YaOKError(.closed, "The link is closed") }
        let authenticated = l.isAuthenticated
        authenticatedOut.pointee = authenticated ? 1 : 0
        peerOut.pointee = !authenticated ? peerUnknown : l.peerIsContact.map { $0 ? peerContact : peerStranger } ?? peerUnknown
    }
}

@_cdecl("yaok_link_close")
public func yaok_link_close(_ link: OpaquePointer?) {
    guard let handle = Handles.take(link, as: LinkHandle.self) else { return }
    handle.link?.close(reason: "Closed by the application")
    handle.callbacks.close()
}
