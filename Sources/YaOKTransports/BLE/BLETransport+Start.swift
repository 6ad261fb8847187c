import Glibc
import CBluetooth
import YaOKSupport
import YaOKSystem
import YaOKLoop
import YaOKCrypto

/// Starting and stopping: finding the adapter, listening, advertising — and, at stop, giving
/// the adapter back as it was found. Every mgmt request that waits for the kernel runs here,
/// outside the transport's lock: a kernel slow to answer (up to 3 s a command) must not hold
/// up `status`, `diagnostics`, or the event thread's handlers, which all take the lock.
extension BLETransport {
    /// What start-up set up, before it is installed in the state (or undone).
    struct Setup {
        let mgmt: MgmtSocket
        let adapter: BLEAdapter
        let listener: Int32
        /// The PSM the listener is bound to, as the kernel reports it (advertised: version 2).
        let psm: UInt16
        let token: [UInt8]
        let advertisingSettingCleared: Bool

        var restore: Restore {
            Restore(mgmt: mgmt, index: adapter.index, instance: adapter.instance,
                    advertisingSetting: advertisingSettingCleared, stopDiscovery: false)
        }
    }

    /// What the transport changed on the adapter, to be given back: at `stop`, or when a start
    /// fails half-way or is stopped meanwhile.
    struct Restore {
        let mgmt: MgmtSocket
        let index: UInt16
        /// Our advertising instance, removed.
        let instance: UInt8?
        /// The adapter's "advertising" setting was on and we turned it off: on again.
        let advertisingSetting: Bool
        /// A discovery run we started (not bluetoothd's), stopped.
        let stopDiscovery: Bool

        /// Waits for each reply (1 s at most each), so that a `start` right after finds the
        /// adapter as it was (the kernel removes an instance asynchronously); then closes the
        /// socket. Blocks: never under the lock.
        func run() {
            if stopDiscovery { _ = try? mgmt.request(.stopDiscovery, index: index, [Mgmt.discoveryTypeLE], timeout: 1) }
            if let instance { _ = try? mgmt.request(.removeAdvertising, index: index, [instance], timeout: 1) }
            if advertisingSetting { _ = try? mgmt.request(.setAdvertising, index: index, [1], timeout: 1) }
            mgmt.close()
        }
    }

    // MARK: - Start

    /// Claims the start under the lock, talks to the kernel outside it, installs the result
    /// under it. A `stop` that comes meanwhile wins: the start undoes its work and throws.
    package func start(opener: any LinkOpener) throws {
        try lifecycle.withLock { _ in try startSerialized(opener: opener) }
    }

    private func startSerialized(opener: any LinkOpener) throws {
        let loop = opener.eventLoop
        let attempt = try state.withLock { s -> UInt64 in
            guard !s.running, s.starting == nil else { throw YaOKError(.invalidArgument, "The BLE transport is already running") }
            s.startAttempts &+= 1
            s.starting = s.startAttempts
            return s.startAttempts
        }
        let setup: Setup
        do {
            setup = try prepareAdapter()
        } catch {
            let message = (error as? BLEUnavailable)?.message ?? "\(error)"
            state.withLock { s in
                guard s.starting == attempt else { return }
                s.starting = nil
                s.unavailable = message
            }
            throw (error as? BLEUnavailable)?.error ?? error
        }
        let outcome = state.withLock { s -> Result<Void, any Error>? in
            guard s.starting == attempt else { return nil }
            s.starting = nil
            do {
                try installLocked(&s, setup, opener: opener, loop: loop)
                s.unavailable = nil
                return .success(())
            } catch {
                s.unavailable = "\(error)"
                return .failure(error)
            }
        }
        switch outcome {
        case .success?:
            return
        case .failure(let error)?:
            Socket.close(setup.listener)
            setup.restore.run()
            throw error
        case nil:
            Socket.close(setup.listener)
            setup.restore.run()
            throw YaOKError(.closed, "The Bluetooth transport was disabled while it was starting")
        }
    }

    /// The adapter to use, the listener, the advertising instance: everything start-up asks
    /// the kernel, waiting for its answers. Throws `BLEUnavailable` for what a person can act
    /// on; whatever it changed is given back first.
    private func prepareAdapter() throws -> Setup {
        let mgmt = try system.openMgmt()
        var listener: Int32 = -1
        var index: UInt16 = 0
        var instance: UInt8?
        var cleared = false
        do {
            let (indexStatus, indexData) = try mgmt.request(.readIndexList, index: Mgmt.indexNone)
            guard indexStatus == 0, let indexes = Mgmt.parseIndexList(indexData) else {
                throw BLEUnavailable.from(status: indexStatus, doing: "listing adapters", adapter: "Bluetooth")
            }
            guard !indexes.isEmpty else {
                throw BLEUnavailable("no Bluetooth adapter found",
                                     guidance: "plug one in or switch it on; `btmgmt info` lists the adapters the kernel sees")
            }
            var infos: [(UInt16, Mgmt.ControllerInfo)] = []
            for i in indexes where requestedIndex == nil || requestedIndex == i {
                let (status, data) = try mgmt.request(.readInfo, index: i)
                if status == 0, let info = Mgmt.parseInfo(data) { infos.append((i, info)) }
            }
            let names = indexes.map { "hci\($0)" }.joined(separator: ", ")
            if let requestedIndex, infos.isEmpty {
                throw BLEUnavailable("no adapter hci\(requestedIndex) (found \(names))", guidance: "choose one of them with --ble-adapter")
            }
            let le = infos.filter { ($0.1.supported & Mgmt.Setting.le) != 0 }
            guard !le.isEmpty else {
                throw BLEUnavailable("\(requestedIndex.map { "hci\($0) does" } ?? "no adapter (\(names)) does") not support Bluetooth LE",
                                     guidance: "use an adapter with Bluetooth 4.0 or later")
            }
            guard let (chosen, info) = le.first(where: { ($0.1.current & Mgmt.Setting.powered) != 0 }) else {
                throw BLEUnavailable.poweredOff("hci\(le[0].0)")
            }
            index = chosen
            let adapterName = "hci\(chosen)"
            guard (info.current & Mgmt.Setting.le) != 0 else {
                throw BLEUnavailable("\(adapterName) has Bluetooth LE turned off", guidance: "turn it on with `btmgmt --index \(chosen) le on`")
            }
            if (info.current & Mgmt.Setting.advertising) != 0 {
                // With this setting on, the kernel makes every outgoing LE connection in the
                // peripheral role (directed advertising), which fails against a peer that is
                // not initiating; advertising instances (ours) work without it. `stop` turns
                // it on again.
                let (status, _) = try mgmt.request(.setAdvertising, index: chosen, [0])
                guard status == 0 else { throw BLEUnavailable.from(status: status, doing: "turning the advertising setting off", adapter: adapterName) }
                cleared = true
            }
            let (featureStatus, featureData) = try mgmt.request(.readAdvertisingFeatures, index: chosen)
            guard featureStatus == 0, let features = Mgmt.parseAdvertisingFeatures(featureData) else {
                throw BLEUnavailable.from(status: featureStatus, doing: "reading advertising features", adapter: adapterName)
            }
            guard features.maxInstances > 0, features.maxDataLength >= BLEAdvert.encodedLength + 3 else {
                throw BLEUnavailable("\(adapterName) cannot advertise a Ya OK advertisement (\(features.maxInstances) instances "
                                     + "of at most \(features.maxDataLength) bytes)",
                                     guidance: "use an adapter with Bluetooth 4.0 or later")
            }
            // Always the adapter's highest instance: a node killed before `stop` leaves its
            // instance advertising (the Ya OK UUID and its last token), and the next start
            // must take that one over rather than add a second beside it. Other advertisers
            // (bluetoothd) take the lowest free instance.
            // In use while a lower one is free, the highest is a leftover of ours; in use with
            // every instance taken, it may be another program's: then we add none.
            let ours = UInt8(clamping: features.maxInstances)
            let taken = Set(features.instances)
            if taken.contains(ours), (1..<ours).allSatisfy(taken.contains) {
                throw BLEUnavailable("\(adapterName) has no free advertising instance (all \(ours) in use by other programs)",
                                     guidance: "stop another advertiser on it (`btmgmt --index \(chosen) advinfo` lists them), or choose another adapter with --ble-adapter")
            }
            var adapter = BLEAdapter(index: chosen, address: info.address, powered: true, instance: ours)
            adapter.privacy = info.privacy

            let (fd, psm) = try system.listen(info.address, options.psm, options.receiveMTU, options.sendBuffer)
            listener = fd
            guard (1...0xff).contains(psm) else {
                throw BLEUnavailable("the L2CAP listener got PSM 0x\(String(psm, radix: 16)), which an advertisement cannot carry",
                                     guidance: "choose a PSM in 0x0080-0x00FF")
            }

            let token = Sodium.randomBytes(BLEAdvert.tokenLength)
            instance = adapter.instance
            // A leftover of ours (see above) goes first; removing an instance that is not
            // there only fails with "Invalid Parameters", which changes nothing.
            _ = try mgmt.request(.removeAdvertising, index: chosen, [adapter.instance])
            let (advStatus, _) = try mgmt.request(.addAdvertising, index: chosen,
                Mgmt.addAdvertisingParameters(instance: adapter.instance, data: BLEAdvert(token: token, psm: psm).encoded))
            guard advStatus == 0 else { throw BLEUnavailable.from(status: advStatus, doing: "starting advertising", adapter: adapterName) }
            return Setup(mgmt: mgmt, adapter: adapter, listener: listener, psm: psm, token: token, advertisingSettingCleared: cleared)
        } catch {
            if listener >= 0 { Socket.close(listener) }
            Restore(mgmt: mgmt, index: index, instance: instance, advertisingSetting: cleared, stopDiscovery: false).run()
            throw error
        }
    }

    /// Puts a prepared adapter into the state: its descriptors on the loop, discovery asked
    /// for, the tick scheduled. Non-blocking (the caller holds the lock).
    private func installLocked(_ s: inout BLEState, _ setup: Setup, opener: any LinkOpener, loop: EventLoop) throws {
        try loop.register(fd: setup.mgmt.fd, for: .readable) { [weak self] _ in self?.mgmtReady() }
        do {
            try loop.register(fd: setup.listener, for: .readable) { [weak self] _ in self?.acceptReady() }
        } catch {
            loop.unregister(fd: setup.mgmt.fd)
            throw error
        }
        var fresh = BLEState()
        let now = EventLoop.monotonicNanoseconds()
        fresh.adapter = setup.adapter
        fresh.advertisingSettingCleared = setup.advertisingSettingCleared
        fresh.token = setup.token
        fresh.advertising = true
        fresh.tokensDrawn = 1
        fresh.running = true
        fresh.opener = opener
        fresh.loop = loop
        fresh.mgmt = setup.mgmt
        fresh.listener = setup.listener
        fresh.listenPSM = setup.psm
        fresh.tokenDrawnAt = now
        fresh.advertisingSince = now
        fresh.startedAt = now
        fresh.startedAtMs = Clock.milliseconds()
        fresh.run = s.run &+ 1
        fresh.nextID = s.nextID
        fresh.startAttempts = s.startAttempts
        s = fresh
        requestDiscoveryLocked(&s)
        let run = s.run
        s.timer = loop.schedule(after: 1) { [weak self] in self?.tick(run: run) }
        s.connectionTimer = loop.schedule(after: 1) { [weak self] in self?.connectionTick(run: run) }
    }

    // MARK: - Stop

    /// Stops scanning and advertising, closes every channel (telling each link) and the
    /// sockets, and gives the adapter back as it was found: our advertising instance removed,
    /// the advertising setting on again if it was, our discovery run stopped. Idempotent;
    /// afterwards diagnostics say "Bluetooth: Disabled". A start in progress is abandoned
    /// (it undoes its own work), and waited for: a stop on the event thread while another
    /// thread's start waits for a slow kernel holds the loop up to that start's timeouts
    /// (3 s a request). The kernel's answers are awaited outside the state lock.
    public func stop() {
        // A start in progress sees this when the kernel answers, and undoes its work; the
        // lifecycle lock then waits for it.
        state.withLock { $0.starting = nil }
        lifecycle.withLock { _ in stopSerialized() }
    }

    private func stopSerialized() {
        let (links, restore) = state.withLock { s -> ([any TransportLink], Restore?) in
            s.unavailable = nil
            s.starting = nil
            guard s.running else { return ([], nil) }
            s.running = false
            if let timer = s.timer { s.loop?.cancel(timer) }
            s.timer = nil
            if let timer = s.connectionTimer { s.loop?.cancel(timer) }
            s.connectionTimer = nil
            let links = closeAllLocked(&s, "the Bluetooth transport stopped")
            if s.listener >= 0 {
                s.loop?.unregister(fd: s.listener)
                Socket.close(s.listener)
                s.listener = -1
            }
            var restore: Restore?
            if let mgmt = s.mgmt {
                s.loop?.unregister(fd: mgmt.fd)
                if let adapter = s.adapter {
                    restore = Restore(mgmt: mgmt, index: adapter.index, instance: adapter.instance,
                                      advertisingSetting: s.advertisingSettingCleared,
                                      stopDiscovery: s.discoveryOurs || s.discoveryRequestedAt != 0)
                } else {
                    mgmt.close()
                }
            }
            s.mgmt = nil
            s.advertising = false
            s.discovering = false
            s.discoveryOurs = false
            s.opener = nil
            s.loop = nil
            s.discovered.removeAll()
            return (links, restore)
        }
        for link in links { link.close(reason: "the Bluetooth transport stopped") }
        restore?.run()
    }

    // MARK: - The kernel, or the tests' fake of it

    /// The listener: bound to the adapter's address and `psm`, listening; returns the
    /// descriptor and the PSM the kernel reports it bound to (getsockname(2)).
    static func listenOnKernel(adapter: BLEAddress, psm: UInt16, receiveMTU: Int, sendBuffer: Int) throws -> (Int32, UInt16) {
        let fd = try L2CAPSocket.open(adapter: adapter, psm: psm, receiveMTU: receiveMTU, sendBuffer: sendBuffer)
        do {
            try L2CAPSocket.listen(fd)
        } catch {
            Socket.close(fd)
            throw error
        }
        var bound = sockaddr_l2()
        var length = socklen_t(MemoryLayout<sockaddr_l2>.size)
        let rc = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, rc == 0 && bound.l2_psm != 0 ? UInt16(littleEndian: bound.l2_psm) : psm)
    }
}

/// The kernel interfaces start-up opens: the real ones, or, in the tests, a socket pair that
/// plays the kernel's mgmt channel and a descriptor that stands for the listener.
struct BLESystem: Sendable {
    var openMgmt: @Sendable () throws -> MgmtSocket
    /// (adapter address, PSM, receive MTU, send buffer) → (listening descriptor, bound PSM).
    var listen: @Sendable (BLEAddress, UInt16, Int, Int) throws -> (Int32, UInt16)

    static let kernel = BLESystem(
        openMgmt: { try MgmtSocket.open() },
        listen: { try BLETransport.listenOnKernel(adapter: $0, psm: $1, receiveMTU: $2, sendBuffer: $3) })
}
