import YaOKLoop

/// Setting our advertising up again for peers that may not have heard it (PROTOCOL.md §9.2,
/// "Re-announcing").
///
/// A scanning controller reports each advertiser once per scan, and Linux drops a report
/// that arrives while its discovery run is still starting. BlueZ's virtual controllers
/// report every advertiser the instant scanning is enabled, so that report races the
/// kernel's own "discovering" state — and under load it lost every 3 s restart for 30 s: the
/// peer with the smaller token never heard us, and we, hearing it, waited the whole 30 s
/// fallback for its connect (the one `scripts/test-ble --bench` run in two that took 31 s).
/// What reaches a scan already under way is an advertiser starting: so when a peer whose
/// turn it is to connect has not done so `reannounceAfter` after we heard it, we set our
/// advertising instance up again (the kernel stops and restarts it), which it then hears;
/// likewise once after a start or power-on at which we heard nobody (both sides may have
/// started advertising before the other scanned).
extension BLETransport {
    /// Whether our advertising should be set up again now: never while an outbound connect
    /// is in progress (the kernel moves advertising around it); then either a peer heard
    /// without a channel for `reannounceAfter` (but less than `fallbackAfter`: then we
    /// connect ourselves) whose token makes it the connector — at most once per
    /// `reannounceInterval`, unless the last one was made before we heard it (it did not
    /// serve it) — or nobody heard and no channel `reannounceAfter` after the adapter
    /// started advertising (once).
    func reannounceDueLocked(_ s: BLEState, now: UInt64) -> Bool {
        guard s.running, s.advertising, let adapter = s.adapter, adapter.powered, !s.adapterGone, !s.isConnecting else { return false }
        let after = BLETransport.nanoseconds(options.reannounceAfter)
        if s.discovered.isEmpty, s.connections.isEmpty, !s.reannouncedSinceAdvertising {
            return s.advertisingSince != 0 && BLETransport.elapsed(now, s.advertisingSince) >= after
        }
        let withChannels = Set(s.connections.values.map { $0.remote.bytes })
        let fallback = BLETransport.nanoseconds(options.fallbackAfter)
        let interval = BLETransport.nanoseconds(options.reannounceInterval)
        return s.discovered.contains { address, peer in
            guard !withChannels.contains(address.bytes), !BLEAdvert.connects(own: s.token, peer: peer.token),
                  s.recentStrangers[address].map({ now >= $0 }) ?? true,
                  let since = peer.unconnectedSince else { return false }
            let waited = BLETransport.elapsed(now, since)
            guard waited >= after, waited < fallback else { return false }
            guard let last = s.lastReannounceAt, last >= since else { return true }
            return BLETransport.elapsed(now, last) >= interval
        }
    }

    /// Sets our advertising up again if `reannounceDueLocked` says so: the same token (Add
    /// Advertising on our instance: the kernel stops advertising and starts it again). With
    /// LE privacy a new token instead, so that the token changes together with the address
    /// (§9.3: the kernel may give the new instance a new address); the new token may make us
    /// the connector, which is progress too.
    func reannounceLocked(_ s: inout BLEState, now: UInt64) {
        guard reannounceDueLocked(s, now: now) else { return }
        s.lastReannounceAt = now
        s.reannounces += 1
        s.reannouncedSinceAdvertising = true
        if s.adapter?.privacy == true {
            rotateTokenLocked(&s)
        } else {
            advertiseLocked(&s)
        }
    }
}
