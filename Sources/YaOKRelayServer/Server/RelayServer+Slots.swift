import Glibc
import YaOKSupport
import YaOKSystem
import YaOKLoop
import YaOKWire

/// Who gets a connection slot (docs/PROTOCOL.md §8.5, "Connections"; loop thread): caps
/// per IPv4 address, per /24 and in all, clamped to the process's descriptor limit; when
/// the relay is full a newcomer takes a slot from the address (within the /24) that holds
/// the most, if that holds more than the newcomer's; a session must SUBSCRIBE or POST
/// soon after READY; one live session per pseudonym.
extension RelayServer {
    /// The /24 of an IPv4 address (host byte order): addresses of one network share it.
    static func prefix(_ address: UInt32) -> UInt32 { address & 0xFFFF_FF00 }

    /// Raises the soft limit on open descriptors to the hard limit and returns the soft
    /// limit in force (the relay needs one descriptor per connection).
    static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur == rlim_t.max ? Int.max : Int(clamping: limit.rlim_cur)
    }

    /// The caps in force: the configured ones, the total clamped to the descriptor limit
    /// less `descriptorReserve` (the store, the listener, the reserve descriptor, logs),
    /// and the per-address and per-/24 caps to the total.
    static func caps(_ c: RelayConfiguration, descriptorLimit: Int) -> RelayCaps {
        let total = max(1, min(c.maxConnections, descriptorLimit - c.descriptorReserve))
        let perPrefix = max(1, min(c.maxConnectionsPerPrefix, total))
        return RelayCaps(connections: total, perPrefix: perPrefix,
                         perAddress: max(1, min(c.maxConnectionsPerAddress, perPrefix)),
                         descriptorLimit: descriptorLimit)
    }

    /// Whether a connection from `address` may have a slot now; makes room if the relay is
    /// full and another address or /24 holds more than this one's.
    func admit(_ address: UInt32) -> Bool {
        let prefix = Self.prefix(address)
        guard connectionsByAddress[address, default: 0] < caps.perAddress,
              connectionsByPrefix[prefix, default: 0] < caps.perPrefix,
              pendingByAddress[address, default: 0] < configuration.maxPendingPerAddress else { return false }
        if connections.count < caps.connections { return true }
        return evictForNewcomer(from: address)
    }

    /// Closes one connection of the /24 holding the most (within it, of the address
    /// holding the most; one not yet READY first, else the newest), if that /24 holds more
    /// than the newcomer's, or is the newcomer's own and the address holds more.
    private func evictForNewcomer(from address: UInt32) -> Bool {
        guard let (topPrefix, held) = connectionsByPrefix.max(by: { $0.value < $1.value }) else { return false }
        let ownPrefix = Self.prefix(address)
        let ownHeld = connectionsByPrefix[ownPrefix, default: 0]
        let victimPrefix: UInt32
        if held > ownHeld + 1 {
            victimPrefix = topPrefix
        } else {
            victimPrefix = ownPrefix
        }
        // The address holding the most within that /24.
        guard let (victimAddress, victimHeld) = connectionsByAddress.filter({ Self.prefix($0.key) == victimPrefix })
            .max(by: { $0.value < $1.value }),
              victimPrefix != ownPrefix || victimHeld > connectionsByAddress[address, default: 0] + 1,
              let ids = idsByAddress[victimAddress] else { return false }
        let candidates = ids.compactMap { connections[$0] }.filter { !$0.isClosing }
        guard let victim = candidates.first(where: { $0.readyAt == nil }) ?? candidates.max(by: { $0.acceptedAt < $1.acceptedAt })
        else { return false }
        evictedConnections += 1
        finish(victim, "evicted: the relay is full and \(Self.dottedQuad(victimAddress)) holds \(victimHeld) connections")
        return true
    }

    /// Counts a connection's slot (accept).
    func countSlot(_ c: RelayConnection) {
        connectionsByAddress[c.address, default: 0] += 1
        connectionsByPrefix[Self.prefix(c.address), default: 0] += 1
        idsByAddress[c.address, default: []].insert(c.id)
    }

    /// Gives a connection's slot back (close).
    func uncountSlot(_ c: RelayConnection) {
        if let count = connectionsByAddress[c.address] {
            connectionsByAddress[c.address] = count > 1 ? count - 1 : nil
        }
        let prefix = Self.prefix(c.address)
        if let count = connectionsByPrefix[prefix] {
            connectionsByPrefix[prefix] = count > 1 ? count - 1 : nil
        }
        idsByAddress[c.address]?.remove(c.id)
        if idsByAddress[c.address]?.isEmpty == true { idsByAddress[c.address] = nil }
    }

    /// A new session of `pseudonym` is READY: older ones of it end (one live session per
    /// pseudonym, so logins of one key cannot pile up).
    func replaceOlderSessions(of pseudonym: [UInt8], keeping id: UInt64) {
        for old in sessionsByPseudonym[pseudonym] ?? [] where old != id {
            guard let c = connections[old] else { continue }
            endSession(c, RelayErrorFrame(request: 0, code: .unavailable,
                                          message: "A newer session of this pseudonym logged in"))
        }
    }

    /// Whether a READY session has been idle past the grace period: no SUBSCRIBE (that
    /// added a mailbox) and no POST within `activityGraceSeconds` of READY.
    func isIdleSession(_ c: RelayConnection, now: UInt64) -> Bool {
        guard let readyAt = c.readyAt, !c.active else { return false }
        return now &- readyAt >= Self.nanoseconds(configuration.activityGraceSeconds)
    }

    /// accept(2) failed with EMFILE/ENFILE: the reserve descriptor is closed, one waiting
    /// connection is taken and closed at once, and the reserve is opened again, so the
    /// listener's queue drains rather than wake the loop for ever or stall new clients.
    func shedWithReserve() -> Bool {
        guard reserveDescriptor >= 0 else { return false }
        Socket.close(reserveDescriptor)
        reserveDescriptor = -1
        var shed = false
        if case .accepted(let fd, _) = Socket.acceptTCP(listener) {
            Socket.close(fd)
            refusedConnections += 1
            shed = true
        }
        reserveDescriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
        return shed
    }
}

/// The connection caps a relay runs with, after clamping (for stats and tests).
public struct RelayCaps: Sendable, Equatable {
    public let connections: Int
    public let perPrefix: Int
    public let perAddress: Int
    /// The soft limit on open descriptors after raising it.
    public let descriptorLimit: Int
}
