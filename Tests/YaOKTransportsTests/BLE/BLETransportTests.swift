import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKNode
import YaOKCrypto
@testable import YaOKTransports
import YaOKWire

/// What runs without Bluetooth: the unavailable path (this machine's kernel has none; on
/// one that has, the adapter `hci99` does not exist), enable and disable, and the discovery
/// decisions (own tokens, who connects, bounds) on the transport's state. The real thing —
/// links over L2CAP between two kernel controllers — is scripts/test-ble, in a VM.
@Suite(.serialized) struct BLETransportTests {
    static func absent() -> BLETransport.Options {
        var o = BLETransport.Options()
        o.adapter = "hci99"
        return o
    }

    @Test func optionsAreChecked() {
        func refused(_ adjust: (inout BLETransport.Options) -> Void) -> Bool {
            var o = BLETransport.Options()
            adjust(&o)
            return (try? BLETransport(options: o)) == nil
        }
        #expect(refused { $0.adapter = "wlan0" })
        #expect(refused { $0.adapter = "hci" })
        #expect(refused { $0.psm = 0x0001 })
        #expect(refused { $0.psm = 0x0100 })
        #expect(refused { $0.receiveMTU = 22 })
        #expect(refused { $0.tokenLifetime = 0 })
        #expect(refused { $0.maxConnections = 0 })
        #expect(!refused { $0.adapter = "hci1" })
        #expect(BLETransport.adapterIndex("hci12") == 12)
    }

    @Test func unavailableBluetoothIsAClearFailure() throws {
        let transport = try BLETransport(options: Self.absent())
        let opener = try FakeOpener()
        #expect(transport.status == "Bluetooth: Disabled")
        do {
            try transport.start(opener: opener)
            Issue.record("started without an adapter hci99")
        } catch let error as YaOKError {
            #expect(error.message.hasPrefix("Bluetooth unavailable: "))
            #expect(error.message.contains("("))  // the guidance
            #expect(transport.status == error.message)
            let d = transport.diagnostics().serialized
            #expect(d.contains("\"running\":false"))
            #expect(d.contains("\"status\":\"Bluetooth unavailable: "))
        }
        #expect(transport.connectionCount == 0 && transport.adapterName == nil)
        transport.stop()
        #expect(transport.status == "Bluetooth: Disabled")
        #expect(transport.diagnostics().serialized.contains("\"status\":\"Bluetooth: Disabled\""))
        transport.stop()  // idempotent
    }

    /// Through the node's transport manager: the failure is the transport's state and
    /// diagnostics, the node goes on with its other transports, and Bluetooth can be
    /// switched off and on again at runtime.
    @Test func theNodeCarriesOnWithoutBluetooth() throws {
        let pair = try LANPair()
        defer { pair.close() }
        let ble = try BLETransport(options: Self.absent())
        try pair.alice.addTransport(ble)
        #expect(throws: YaOKError.self) { try pair.alice.setTransport("ble", enabled: true) }
        let state = try #require(pair.alice.transports().first { $0.name == "ble" })
        #expect(state.phase == .failed && state.displayName == "Bluetooth")
        #expect(state.error?.hasPrefix("Bluetooth unavailable: ") == true)
        let diagnostics = try pair.alice.diagnostics().serialized
        #expect(diagnostics.contains("Bluetooth unavailable: "))

        // The LAN still carries messages.
        _ = try pair.alice.send(to: pair.bobID, text: "no Bluetooth here")
        try waitUntil("Bob to receive it over the LAN", timeout: 10) { try pair.bob.texts(pair.aliceID) == ["no Bluetooth here"] }

        try pair.alice.setTransport("ble", enabled: false)
        #expect(pair.alice.transports().first { $0.name == "ble" }?.phase == .disabled)
        #expect(ble.diagnostics().serialized.contains("\"status\":\"Bluetooth: Disabled\""))
        #expect(throws: YaOKError.self) { try pair.alice.setTransport("ble", enabled: true) }
        #expect(pair.alice.transports().first { $0.name == "ble" }?.phase == .failed)
        try pair.alice.setTransport("ble", enabled: false)
        #expect(pair.alice.transports().first { $0.name == "lan" }?.phase == .running)
    }

    // MARK: - Discovery decisions, on the state

    private func address(_ n: Int) -> BLEAddress {
        BLEAddress(bytes: [0x00, 0xAA, 0x02, UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)], kind: .lePublic)
    }

    @Test func tokensRotateAndOwnAdvertsAreIgnored() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            t.rotateTokenLocked(&s)
            let first = s.token
            #expect(first.count == BLEAdvert.tokenLength && s.previousToken == nil && s.tokensDrawn == 1)
            t.rotateTokenLocked(&s)
            #expect(s.token != first && s.previousToken == first && s.tokensDrawn == 2)
            // Our own advertisement (the current token, or the previous one still on the air)
            // is not a peer.
            t.heardLocked(&s, BLEAdvert(token: s.token), from: address(1), rssi: -50)
            t.heardLocked(&s, BLEAdvert(token: first), from: address(1), rssi: -50)
            #expect(s.discovered.isEmpty && s.advertsHeard == 0)
        }
    }

    @Test func theSmallerTokenConnectsTheLargerWaits() throws {
        var options = BLETransport.Options()
        options.fallbackAfter = 10
        let t = try BLETransport(options: options)
        t.state.withLock { s in
            s.token = [UInt8](repeating: 0x80, count: 8)
            let smaller = [UInt8](repeating: 0x10, count: 8), larger = [UInt8](repeating: 0xf0, count: 8)
            // Ours to connect: an attempt is made at once (here it goes no further: no adapter).
            t.heardLocked(&s, BLEAdvert(token: larger), from: address(1), rssi: -40)
            #expect(s.discovered[address(1)]?.lastAttempt != nil)
            // Theirs: we wait…
            t.heardLocked(&s, BLEAdvert(token: smaller), from: address(2), rssi: -40)
            #expect(s.discovered[address(2)]?.lastAttempt == nil && s.discovered[address(2)]?.unconnectedSince != nil)
            // …until it has not connected for `fallbackAfter`.
            let now = EventLoop.monotonicNanoseconds()
            s.discovered[address(2)]?.unconnectedSince = now - BLETransport.nanoseconds(11)
            t.considerLocked(&s, address(2), now: now)
            #expect(s.discovered[address(2)]?.lastAttempt != nil)
            #expect(s.firstPeerAfterMs != nil && s.advertsHeard == 2)
        }
    }

    /// Adverts from ever new addresses (anyone can send them) cannot grow the peer table.
    @Test func discoveredPeersAreBounded() throws {
        var options = BLETransport.Options()
        options.maxDiscoveredPeers = 16
        let t = try BLETransport(options: options)
        t.state.withLock { s in
            s.token = [UInt8](repeating: 0x00, count: 8)
            for n in 0..<1000 {
                t.heardLocked(&s, BLEAdvert(token: Sodium.randomBytes(8)), from: address(n), rssi: -70)
            }
            #expect(s.discovered.count == 16)
            #expect(s.discovered[address(999)] != nil)
        }
    }

    /// A failed outbound connect hands the connecting role to the peer: a new token larger
    /// than the peer's (PROTOCOL.md §9.2).
    @Test func aFailedConnectHandsTheRoleOver() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            s.running = true  // a failure while stopping, or with our adapter off, hands nothing over
            s.adapter = BLEAdapter(index: 0, address: address(100), powered: true, instance: 1)
            s.token = [UInt8](repeating: 0x10, count: 8)
            let peer = [UInt8](repeating: 0x80, count: 8)
            s.discovered[address(1)] = BLEPeer(token: peer, rssi: -40, firstSeenMs: 0, lastSeenMs: 0, lastSeen: 0)
            #expect(BLEAdvert.connects(own: s.token, peer: peer))
            t.handOverLocked(&s, address(1))
            #expect(!BLEAdvert.connects(own: s.token, peer: peer))
            #expect(s.handOvers == 1 && s.previousToken == [UInt8](repeating: 0x10, count: 8))
            // Not ours to connect any more: nothing to hand over.
            let token = s.token
            t.handOverLocked(&s, address(1))
            #expect(s.token == token && s.handOvers == 1)
        }
    }

    /// After a channel closes, the token the peer had meanwhile is a ghost for a while (a
    /// powered-off controller may go on advertising it); a fresh token is heard at once.
    @Test func theTokenOfAClosedChannelIsIgnoredForAWhile() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            s.token = [UInt8](repeating: 0xf0, count: 8)
            let old = [UInt8](repeating: 0x20, count: 8), fresh = [UInt8](repeating: 0x30, count: 8)
            let now = EventLoop.monotonicNanoseconds()
            s.staleTokens[address(1)] = (old, now + BLETransport.nanoseconds(30))
            t.heardLocked(&s, BLEAdvert(token: old), from: address(1), rssi: -40)
            #expect(s.discovered[address(1)] == nil && s.staleAdvertsIgnored == 1)
            t.heardLocked(&s, BLEAdvert(token: fresh), from: address(1), rssi: -40)
            #expect(s.discovered[address(1)]?.token == fresh && s.staleTokens[address(1)] == nil)
            // Expired: the old token counts again.
            s.staleTokens[address(2)] = (old, now &- 1)
            t.heardLocked(&s, BLEAdvert(token: old), from: address(2), rssi: -40)
            #expect(s.discovered[address(2)] != nil)
        }
    }

    /// Our own adapter going off keeps the peers heard lately (with no ghost rule for them),
    /// even one whose channel the kernel ended just before, and at power-on the side whose
    /// turn it is connects at once.
    @Test func peersAreKeptThroughOurOwnPowerCycle() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            s.running = true
            s.adapter = BLEAdapter(index: 0, address: address(100), powered: true, instance: 1)
            s.token = [UInt8](repeating: 0x80, count: 8)
            let peer = [UInt8](repeating: 0xf0, count: 8)
            s.discovered[address(1)] = BLEPeer(token: peer, rssi: -40, firstSeenMs: 0, lastSeenMs: 0, lastSeen: 0)
            s.discovered[address(1)]?.lastAttempt = EventLoop.monotonicNanoseconds()
            // Peer 2's channel was closed by a hang-up just before New Settings said "off".
            s.lostPeers[address(2)] = (BLEPeer(token: peer, rssi: -40, firstSeenMs: 0, lastSeenMs: 0, lastSeen: 0),
                                       EventLoop.monotonicNanoseconds())
            s.staleTokens[address(2)] = (peer, EventLoop.monotonicNanoseconds() + BLETransport.nanoseconds(30))
            _ = t.poweredLocked(&s, false)
            #expect(s.discovered[address(1)] != nil && s.discovered[address(1)]?.lastAttempt == nil)
            #expect(s.discovered[address(2)] != nil && s.staleTokens.isEmpty && s.lostPeers.isEmpty)
            #expect(s.token != [UInt8](repeating: 0x80, count: 8))  // drawn while off
            s.token = [UInt8](repeating: 0x01, count: 8)  // ours to connect to both
            // The kernel took that token while off (its Add Advertising reply): kept at
            // power-on. Without the reply a fresh token is drawn there, and one in 16 is not
            // ours to connect with (the test failed so once in CI).
            s.advertisingStoredWhileOff = true
            _ = t.poweredLocked(&s, true)
            #expect(s.token == [UInt8](repeating: 0x01, count: 8))
            // The two are tried in a random order (ties, §9.2): here each connect fails at once
            // (no Bluetooth socket in a unit test), so the second may be tried too.
            let attempted = [1, 2].filter { s.discovered[address($0)]?.lastAttempt != nil }
            #expect(!attempted.isEmpty)
        }
    }

    /// The transport's connection follows its adapter: disconnected (radio off) while it is
    /// off or removed, connected while it is on (issue 21 §3).
    @Test func theConnectionFollowsTheAdapter() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            s.running = true
            s.adapter = BLEAdapter(index: 0, address: address(100), powered: true, instance: 1)
            s.advertising = true
            s.scanStarted = true
        }
        #expect(t.connection == .connected)
        t.state.withLock { s in _ = t.poweredLocked(&s, false) }
        #expect(t.connection?.state == .disconnected && t.connection?.reason == .radioOff)
        #expect(t.connection?.detail?.contains("powered off") == true)
        t.state.withLock { s in
            _ = t.poweredLocked(&s, true)
            _ = t.handleLocked(&s, .commandComplete(index: 0, opcode: Mgmt.Op.addAdvertising.rawValue, status: 0, data: [1]))
            _ = t.handleLocked(&s, .discovering(index: 0, type: 6, on: true))
        }
        #expect(t.connection == .connected)
        t.state.withLock { s in
            s.adapterGone = true
            _ = t.poweredLocked(&s, false)
        }
        #expect(t.connection?.reason == .radioOff && t.connection?.detail?.contains("removed") == true)
    }

    /// An adapter that is starting is connecting, not connected, until it is powered,
    /// advertising and a scan has started; a scan paused for an outbound connect does not
    /// make it connecting again; a power cycle does, until the next scan starts (issue 21 §3).
    @Test func aStartingAdapterIsConnectingUntilItAdvertisesAndScans() throws {
        let t = try BLETransport()
        func state() -> String {
            guard let c = t.connection else { return "none" }
            return c.reason.map { "\(c.state.rawValue):\($0.rawValue)" } ?? c.state.rawValue
        }
        var sequence = [state()]
        // As `installLocked` leaves it: Add Advertising answered, Start Discovery only asked for.
        t.state.withLock { s in
            s.running = true
            s.adapter = BLEAdapter(index: 0, address: address(100), powered: true, instance: 1)
            s.advertising = true
        }
        sequence.append(state())
        #expect(t.connection?.detail == "Bluetooth: hci0 starting (waiting for scanning)")
        t.state.withLock { s in _ = t.handleLocked(&s, .discovering(index: 0, type: 6, on: true)) }
        sequence.append(state())
        t.state.withLock { s in _ = t.handleLocked(&s, .discovering(index: 0, type: 6, on: false)) }  // paused or run over
        sequence.append(state())
        t.state.withLock { s in _ = t.poweredLocked(&s, false) }
        sequence.append(state())
        t.state.withLock { s in
            _ = t.poweredLocked(&s, true)
            s.advertising = false  // a fresh token's Add Advertising not answered yet
        }
        sequence.append(state())
        #expect(t.connection?.detail == "Bluetooth: hci0 starting (waiting for advertising and scanning)")
        t.state.withLock { s in _ = t.handleLocked(&s, .discovering(index: 0, type: 6, on: true)) }
        sequence.append(state())
        t.state.withLock { s in _ = t.handleLocked(&s, .commandComplete(index: 0, opcode: Mgmt.Op.addAdvertising.rawValue, status: 0, data: [1])) }
        sequence.append(state())
        #expect(sequence == ["none", "connecting", "connected", "connected", "disconnected:radio_off",
                             "connecting", "connecting", "connected"])
    }

    /// Connecting for long says why: what the kernel refused while the adapter waited for
    /// advertising or a scan (a refusal it no longer waits on is not shown).
    @Test func aConnectingAdapterSaysWhatTheKernelRefused() throws {
        let t = try BLETransport()
        t.state.withLock { s in
            s.running = true
            s.adapter = BLEAdapter(index: 0, address: address(100), powered: true, instance: 1)
            s.advertising = true
            _ = t.handleLocked(&s, .commandComplete(index: 0, opcode: Mgmt.Op.startDiscovery.rawValue, status: 0x0a, data: [6]))
        }
        #expect(t.connection?.state == .connecting)
        #expect(t.connection?.detail == "Bluetooth: hci0 starting (waiting for scanning): Start Discovery: busy")
        t.state.withLock { s in
            _ = t.handleLocked(&s, .commandComplete(index: 0, opcode: Mgmt.Op.addAdvertising.rawValue, status: 0x0a, data: [1]))
        }
        #expect(t.connection?.detail
                == "Bluetooth: hci0 starting (waiting for advertising and scanning): Add Advertising: busy; Start Discovery: busy")
        t.state.withLock { s in _ = t.handleLocked(&s, .discovering(index: 0, type: 6, on: true)) }
        #expect(t.connection?.detail == "Bluetooth: hci0 starting (waiting for advertising): Add Advertising: busy")
    }
}
