import CYaOK
import YaOK

/* ---- links ---- */

// yaok_link_send_callback, yaok_link_closed_callback and yaok_free_callback come from
// include/yaok.h (the CYaOK module).

/// YAOK_LINK_INITIATOR / YAOK_LINK_RESPONDER
let linkInitiator = YAOK_LINK_INITIATOR, linkResponder = YAOK_LINK_RESPONDER

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
    /// A stream link (yaok_link_open_stream): each unit goes to the app as one frame
    /// (docs/PROTOCOL.md §4.6), u16 big-endian length first.
    let framed: Bool
    fileprivate struct State {
        var closed = false
        var running = 0
        /// Set once the link is open: a failed yaok_link_open must not free user_data.
        var free: yaok_free_callback?
        /// The handle has been written to yaok_link_open's `*out`: units may go to the app.
        var armed = false
        /// Units the node sent before that (the initiator's first), and while they are
        /// being handed on, so that a later unit cannot overtake them.
        var held: [[UInt8]] = []
        var draining = false
    }
    private let state = Locked(State())

    init(send: @escaping yaok_link_send_callback, closed: yaok_link_closed_callback?,
         userData: UnsafeMutableRawPointer?, framed: Bool) {
        self.send = send
        self.closedCallback = closed
        self.userData = userData
        self.framed = framed
    }

    /// A safety net: the node dropped the link without closing it.
    deinit { state.withLock { $0.free }?(userData) }

    /// The handle is in the app's hands (`*out` written): from now on units go to the send
    /// callback, the held ones first, on the event thread (`loop`).
    func arm(_ free: yaok_free_callback?, on loop: EventLoop) {
        state.withLock { s in
            s.free = free
            s.armed = true
            s.draining = true
        }
        if !loop.post({ [self] in drainHeld() }) { drainHeld() }
    }

    /// Hands the held units on, in order; a unit that arrives meanwhile queues behind them.
    private func drainHeld() {
        while let unit = state.withLock({ s -> [UInt8]? in
            guard !s.held.isEmpty else {
                s.draining = false
                return nil
            }
            return s.held.removeFirst()
        }) {
            deliver(unit)
        }
    }

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

    /// One unit to the application, borrowed for the call, once the handle is out (else
    /// held until it is). Nothing after a close.
    func transmit(_ unit: [UInt8]) {
        let hold = state.withLock { s -> Bool in
            guard !s.armed || s.draining else { return false }
            s.held.append(unit)
            return true
        }
        if !hold { deliver(unit) }
    }

    private func deliver(_ unit: [UInt8]) {
        // A stream link's unit is at most one packet (17,408 bytes), which a frame holds.
        let bytes = framed ? ((try? Frame.encode(unit)) ?? []) : unit
        guard !bytes.isEmpty else { return }
        calling { bytes.withUnsafeBufferPointer { _ = send(userData, $0.baseAddress, $0.count) } }
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
    let id: UInt64
    let callbacks: LinkCallbacks
    /// A stream link's deframer (yaok_link_open_stream); nil for a unit link.
    let frames: Locked<FrameDecoder>?
    /// The node's event thread, where a stream link that broke its framing is reported closed.
    weak var loop: EventLoop?
    init(_ link: Link, _ callbacks: LinkCallbacks, stream: Bool, loop: EventLoop) throws {
        self.link = link
        self.loop = loop
        id = link.id
        self.callbacks = callbacks
        frames = stream ? Locked(try FrameDecoder()) : nil
    }

    /// The units in `bytes`: themselves, or on a stream link the frames they complete.
    func units(_ bytes: ArraySlice<UInt8>) throws -> [[UInt8]] {
        guard let frames else { return [Array(bytes)] }
        return try frames.withLock { try $0.feed(bytes) }
    }

    /// How much of a stream link's input is deframed at once: the frames of one slice go to
    /// the node before the next is read, so a hostile peer's flood of 3-byte frames in one
    /// large read costs a few hundred KiB of unit arrays, not twenty times the read (12 MiB
    /// of them took 236 MB), and the rest is not even deframed once the node refuses one.
    static let streamSliceBytes = 16 << 10
}

/// Opens a link for yaok_link_open and yaok_link_open_stream: `*out` is written before the
/// send callback is first called.
private func openLink(_ node: OpaquePointer?, _ transport: UnsafePointer<CChar>?, _ role: UInt32, mtu: Int, stream: Bool,
                      _ send: yaok_link_send_callback?, _ closed: yaok_link_closed_callback?,
                      _ userData: UnsafeMutableRawPointer?, _ freeUserData: yaok_free_callback?,
                      _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out")
        let send = try required(send, "send")
        let name = try string(transport, "transport")
        let callbacks = LinkCallbacks(send: send, closed: closed, userData: userData, framed: stream)
        let link = try n.openLink(transport: name, role: try linkRole(role), mtu: mtu, stream: stream,
                                  send: { callbacks.transmit($0) }, closed: { callbacks.closedByNode($0) })
        let handle: LinkHandle
        do {
            handle = try LinkHandle(link, callbacks, stream: stream, loop: n.eventLoop)
        } catch {
            link.close(reason: "The link could not be set up")
            throw error
        }
        out.pointee = Handles.make(handle)
        callbacks.arm(freeUserData, on: n.eventLoop)
    }
}

@c @implementation
public func yaok_link_open(_ node: OpaquePointer?, _ transport: UnsafePointer<CChar>?, _ role: UInt32, _ mtu: UInt32,
                           _ send: yaok_link_send_callback?, _ closed: yaok_link_closed_callback?,
                           _ userData: UnsafeMutableRawPointer?, _ freeUserData: yaok_free_callback?,
                           _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    openLink(node, transport, role, mtu: Int(mtu), stream: false, send, closed, userData, freeUserData, out)
}

@c @implementation
public func yaok_link_open_stream(_ node: OpaquePointer?, _ transport: UnsafePointer<CChar>?, _ role: UInt32,
                                  _ send: yaok_link_send_callback?, _ closed: yaok_link_closed_callback?,
                                  _ userData: UnsafeMutableRawPointer?, _ freeUserData: yaok_free_callback?,
                                  _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    // One frame holds any packet whole: nothing is fragmented on a stream (§4.7).
    openLink(node, transport, role, mtu: Wire.maxPacketLength, stream: true, send, closed, userData, freeUserData, out)
}

@c @implementation
public func yaok_link_id(_ link: OpaquePointer?, _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    fillValue({ try Handles.borrow(link, as: LinkHandle.self, "link") }, out, "out_link_id") { handle in handle.id }
}

@c @implementation
public func yaok_link_receive(_ link: OpaquePointer?, _ unit: UnsafePointer<UInt8>?, _ unitLength: Int) -> Int32 {
    withHandle(link, LinkHandle.self, "link") { handle in try handle.receive(try bytes(unit, unitLength, "unit")) }
}

extension LinkHandle {
    /// The open link (YAOK_E_CLOSED once either side closed it).
    func openLink() throws -> Link {
        guard let l = link, !callbacks.isClosed else { throw linkClosed() }
        return l
    }

    /// Bytes from the application: units, or on a stream link a slice at a time.
    func receive(_ bytes: [UInt8]) throws {
        let l = try openLink()
        var start = bytes.startIndex
        repeat {
            let end = frames == nil ? bytes.endIndex : min(start + LinkHandle.streamSliceBytes, bytes.endIndex)
            try receiveUnits(bytes[start..<end], self, l)
            start = end
        } while start < bytes.endIndex
    }

    /// yaok_link_peer's out-values: authenticated (1/0) and YAOK_LINK_PEER_*.
    func peer() throws -> (Int32, UInt32) {
        let l = try openLink()
        return (l.isAuthenticated ? 1 : 0, linkPeerCode(authenticated: l.isAuthenticated, isContact: l.peerIsContact))
    }
}

/// Hands the units in `bytes` (on a stream link: the frames they complete) to the node.
private func receiveUnits(_ bytes: ArraySlice<UInt8>, _ handle: LinkHandle, _ l: Link) throws {
    let units: [[UInt8]]
    do {
        units = try handle.units(bytes)
    } catch let error as YaOKError {
        // The stream can no longer be resynchronised: the link ends.
        // Closed as the node closes a link that broke the protocol: the closed callback
        // runs on the event thread, never inside this call.
        let reason = "Stream framing broken: \(error.message)"
        l.close(reason: reason)
        let callbacks = handle.callbacks
        if !(handle.loop?.post({ callbacks.closedByNode(reason) }) ?? false) { callbacks.close() }
        throw error
    }
    for unit in units {
        guard l.receive(unit) else {
            throw YaOKError(.linkFailed, "The unit was refused: the link is closed or sent faster than it is processed")
        }
    }
}

/// YAOK_E_CLOSED for a link, with a message that says it was the link.
private func linkClosed() -> YaOKError {
    YaOKError(.closed, "The link is closed (by the application, the peer or the node): open a new one")
}

/// YAOK_LINK_PEER_*
private let peerUnknown = YAOK_LINK_PEER_UNKNOWN, peerContact = YAOK_LINK_PEER_CONTACT, peerStranger = YAOK_LINK_PEER_STRANGER

/// YAOK_LINK_PEER_* of a link that is (or is not yet) authenticated.
func linkPeerCode(authenticated: Bool, isContact: Bool?) -> UInt32 {
    !authenticated ? peerUnknown : isContact.map { $0 ? peerContact : peerStranger } ?? peerUnknown
}

@c @implementation
public func yaok_link_peer(_ link: OpaquePointer?, _ outAuthenticated: UnsafeMutablePointer<Int32>?,
                           _ outPeer: UnsafeMutablePointer<UInt32>?) -> Int32 {
    fillValues({ try Handles.borrow(link, as: LinkHandle.self, "link") }, (outAuthenticated, "out_authenticated"),
               (outPeer, "out_peer")) { handle in try handle.peer() }
}

@c @implementation
public func yaok_link_close(_ link: OpaquePointer?) {
    guard let handle = Handles.take(link, as: LinkHandle.self) else { return }
    handle.link?.close(reason: "Closed by the application")
    handle.callbacks.close()
}
