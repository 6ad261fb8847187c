import YaOKSupport
import YaOKLoop

/// Transport connections and "Internet: Available/Unavailable" (AC-060-01): what transports
/// report, the events that announce a change, and the watch on the default route.
extension Node {
    /// How often the default route is looked at again while a transport runs: a cable
    /// pulled or a Wi-Fi lost shows within this long even when no relay notices.
    static let internetCheckSeconds = 10.0

    /// A transport says its connection changed (a relay: connecting, connected, disconnected
    /// with the reason and next retry). Emits TRANSPORT_CONNECTION when it differs from the
    /// last report, and INTERNET_CHANGED if that changes with it. Call without the
    /// transport's lock (the node's is taken). `sequence` (`TransportConnection.nextSequence`,
    /// taken when the connection was read): a report older than one already taken is
    /// dropped, so a transport that reports from two threads at once (its own loop, and a
    /// stop or unlock on another) cannot leave an older state, or an event for it, after a
    /// newer one. Nil: no ordering.
    public func reportConnection(_ transport: String, _ connection: TransportConnection, sequence: UInt64? = nil) {
        let changed = (try? withStore { _, s -> Bool in
            guard var entry = s.delivery.transports[transport] else { return false }
            if let sequence {
                if let last = entry.reportSequence, sequence <= last { return false }
                entry.reportSequence = sequence
                s.delivery.transports[transport] = entry
            }
            guard entry.connection != connection else { return false }
            entry.connection = connection
            if let answered = connection.answered { entry.answered = answered }
            if entry.announced != connection {
                entry.announced = connection
                // Under the node's lock: reports taken one after the other are announced
                // in that order, whichever threads they came from.
                events.emit(.transportConnection(name: transport, connection))
            }
            s.delivery.transports[transport] = entry
            return true
        }) ?? false
        guard changed else { return }
        connectivityChanged(startWatch: false)
    }

    /// Whether the node has a usable route to the internet now: the default route, and what
    /// the running transports that reach the internet (relays) last reported.
    public func internet() -> InternetStatus {
        (try? withStore { _, s in Node.internet(s) }) ?? InternetStatus(defaultRoute: DefaultRoute.present(), relay: .none)
    }

    /// Under the node's lock: the route tables are small files, read in microseconds.
    static func internet(_ s: NodeState) -> InternetStatus {
        let answers = s.delivery.transports.values.filter { $0.phase == .running && $0.transport.reachesInternet }.map(\.answered)
        return InternetStatus(defaultRoute: DefaultRoute.present(), relay: relayAnswer(answers))
    }

    /// Each running internet transport's last answer: one that answered is enough; all
    /// without an answer is no answer; otherwise not known yet.
    static func relayAnswer(_ answers: [Bool?]) -> InternetStatus.Relay {
        guard !answers.isEmpty else { return .none }
        if answers.contains(true) { return .answers }
        return answers.allSatisfy { $0 == false } ? .noAnswer : .unknown
    }

    /// Looks at the internet status again and emits INTERNET_CHANGED when Available or
    /// Unavailable differs from the last look (the first look only records it). `startWatch`: a transport
    /// was just started, so the periodic look starts if it is not running.
    func connectivityChanged(startWatch: Bool) {
        // Looked at and recorded in one section, so two callers at once cannot record an
        // older look over a newer one.
        let changed = (try? withStore { _, s -> InternetStatus? in
            let now = Node.internet(s)
            // Available ↔ Unavailable is the change; why it is so may change silently.
            let changed = s.delivery.internet.map { $0.available != now.available } ?? false
            s.delivery.internet = now
            if startWatch && s.delivery.internetTimer == nil && !options.callerRunsTimers {
                s.delivery.internetTimer = loop.schedule(after: Node.internetCheckSeconds) { [weak self] in self?.internetTick() }
            }
            return changed ? now : nil
        }) ?? nil
        if let changed { events.emit(.internetChanged(changed)) }
    }

    /// The periodic look: again while any transport runs, else the watch ends.
    private func internetTick() {
        let running = (try? withStore { _, s -> Bool in
            s.delivery.internetTimer = nil
            return s.delivery.transports.values.contains { $0.phase == .running }
        }) ?? false
        connectivityChanged(startWatch: running)
    }
}
