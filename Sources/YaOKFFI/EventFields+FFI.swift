import CYaOK
import YaOK

/* ---- typed access: events ---- */

/// What the typed getters read from one event while its callback runs: the event itself
/// and the strings it lends (made once, before the callback, so a getter allocates nothing).
final class EventView: @unchecked Sendable {
    let event: NodeEvent
    /// The transport's name (TRANSPORT_CHANGED, TRANSPORT_NOTICE).
    let transportName: LentString?
    /// yaok_event_text: notice, failure, lock reason or unlock method.
    let text: LentString?

    init(_ event: NodeEvent) {
        self.event = event
        var name: String?, text: String?
        switch event {
        case .transportChanged(let t): name = t.name; text = t.phase == .failed ? t.error : nil
        case .transportNotice(let n): name = n.transport; text = n.message
        case .locked(let reason): text = reason
        case .unlocked(let method): text = method
        case .linkOpened(let l), .linkAuthenticated(let l, _, _): name = l.transport
        case .linkClosed(let l, let reason): name = l.transport; text = reason
        case .transportConnection(let n, let c): name = n; text = c.detail
        case .internetChanged(let i): text = i.line
        default: break
        }
        // Allocation failure leaves the field nil: its getter then says out of memory.
        transportName = name.flatMap { try? LentString($0) }
        self.text = text.flatMap { try? LentString($0) }
        wantedName = name != nil
        wantedText = text != nil
    }

    private let wantedName: Bool
    private let wantedText: Bool

    /// The event's name for messages: "YAOK_EVENT_LOCKED (1)".
    var label: String { event.abiLabel }

    /// The link a link event is about.
    var link: LinkEventInfo? {
        switch event {
        case .linkOpened(let l), .linkAuthenticated(let l, _, _), .linkClosed(let l, _): return l
        default: return nil
        }
    }

    var message: Message? {
        switch event {
        case .messageStored(let m), .messageStatusChanged(let m): return m
        default: return nil
        }
    }

    func lentName() throws -> LentString {
        guard wantedName else { throw absent("transport name", label) }
        guard let transportName else { throw YaOKError(.outOfMemory) }
        return transportName
    }

    func lentText() throws -> LentString {
        guard wantedText else { throw absent("text", label) }
        guard let text else { throw YaOKError(.outOfMemory) }
        return text
    }
}

/// The events whose callbacks are running, by the address of the `yaok_event` passed: a
/// getter finds its event here, and refuses a pointer that is not (or no longer) live.
enum LiveEvents {
    private static let live = Locked([UInt: EventView]())

    static func begin(_ pointer: UnsafePointer<yaok_event>, _ view: EventView) {
        live.withLock { $0[UInt(bitPattern: pointer)] = view }
    }

    static func end(_ pointer: UnsafePointer<yaok_event>) {
        _ = live.withLock { $0.removeValue(forKey: UInt(bitPattern: pointer)) }
    }

    static func view(_ pointer: UnsafePointer<yaok_event>?) throws -> EventView {
        let p = try required(pointer, "event")
        guard let view = live.withLock({ $0[UInt(bitPattern: p)] }) else {
            throw YaOKError(.invalidArgument,
                            "event is not a live event (read it inside the callback it was given to)")
        }
        return view
    }
}

/// The fields the typed getters read, each `absent` (notFound) where the event has none.
extension EventView {
    func contactID() throws -> Int64 {
        switch event {
        case .messageReceived(let contact, _), .contactsChanged(let contact): return contact
        case .messageStored(let m), .messageStatusChanged(let m): return m.conversationID
        case .linkAuthenticated(_, true, let contact?): return contact
        default: throw absent("contact id", label)
        }
    }

    func messageID() throws -> MessageID {
        switch event {
        case .messageReceived(_, let id): return id
        case .messageStored(let m), .messageStatusChanged(let m): return m.messageID
        default: throw absent("message ID", label)
        }
    }

    func eventMessage(_ what: String) throws -> Message {
        guard let message else { throw absent(what, label) }
        return message
    }

    func transportState() throws -> UInt32 {
        guard case .transportChanged(let t) = event else { throw absent("transport state", label) }
        return transportStateCode(t.phase)
    }

    func linkID() throws -> UInt64 {
        guard let link else { throw absent("link id", label) }
        return link.linkID
    }

    func linkPeer() throws -> UInt32 {
        guard case .linkAuthenticated(_, let isContact, _) = event else { throw absent("link peer", label) }
        return linkPeerCode(authenticated: true, isContact: isContact)
    }
}

@c @implementation
public func yaok_event_contact_id(_ event: UnsafePointer<yaok_event>?, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    eventValue(event, out, "out_contact_id") { try $0.contactID() }
}

@c @implementation
public func yaok_event_message_id(_ event: UnsafePointer<yaok_event>?, _ out: UnsafeMutablePointer<UInt8>?) -> Int32 {
    fill({ try LiveEvents.view(event) }, out, "out_message_id") { view, out in copyMessageID(try view.messageID(), to: out) }
}

@c @implementation
public func yaok_event_message_status(_ event: UnsafePointer<yaok_event>?, _ out: UnsafeMutablePointer<UInt32>?) -> Int32 {
    eventValue(event, out, "out_status") { try $0.eventMessage("message status").status.abiCode }
}

@c @implementation
public func yaok_event_message(_ event: UnsafePointer<yaok_event>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    eventValue(event, out, "out") { Handles.make(try MessageHandle(try $0.eventMessage("message"))) }
}

@c @implementation
public func yaok_event_transport_name(_ event: UnsafePointer<yaok_event>?,
                                      _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    fill({ try LiveEvents.view(event) }, out, "out_name") { view, out in try view.lentName().lend(to: out) }
}

@c @implementation
public func yaok_event_transport_state(_ event: UnsafePointer<yaok_event>?, _ out: UnsafeMutablePointer<UInt32>?) -> Int32 {
    eventValue(event, out, "out_state") { try $0.transportState() }
}

@c @implementation
public func yaok_event_text(_ event: UnsafePointer<yaok_event>?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    fill({ try LiveEvents.view(event) }, out, "out_text") { view, out in try view.lentText().lend(to: out) }
}

/// YAOK_TRANSPORT_*.
func transportStateCode(_ phase: TransportState.Phase) -> UInt32 {
    switch phase {
    case .disabled: return YAOK_TRANSPORT_DISABLED
    case .running: return YAOK_TRANSPORT_RUNNING
    case .failed: return YAOK_TRANSPORT_FAILED
    }
}

@c @implementation
public func yaok_event_link_id(_ event: UnsafePointer<yaok_event>?, _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    eventValue(event, out, "out_link_id") { try $0.linkID() }
}

@c @implementation
public func yaok_event_link_peer(_ event: UnsafePointer<yaok_event>?, _ out: UnsafeMutablePointer<UInt32>?) -> Int32 {
    eventValue(event, out, "out_peer") { try $0.linkPeer() }
}
