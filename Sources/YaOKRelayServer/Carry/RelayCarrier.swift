import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The relay as a carrier (docs/PROTOCOL.md §12.9): the meetings of every client session
/// with the relay's carry store. Pure and synchronous (`receive` returns the payloads to
/// send back), so tests drive it without sockets; `RelayCarryThread` runs it off the loop.
///
/// The relay keeps **wait-phase copies**: it asks for every packet offered (within the
/// client's quota), whatever its budget, stores it with budget 1, and hands a copy (budget
/// 1, its own kept) only to a client that asks for it, which by §12.3 step 3 is one whose
/// tag it is. So depositing costs the node none of its budget, and the relay never
/// sprays: it adds one copy per relay (cluster) and holds it, always on, until the
/// recipient comes or a purge claim or expiry deletes it.
final class RelayCarrier {
    private let store: RelayCarryStore
    let policy: CarryPolicy
    private var meetings: [UInt64: RelayCarryMeeting] = [:]
    /// The store's live keys as a reconciliation set, shared by every meeting that opens
    /// while the store has not changed (Swift arrays are shared until written): a relay
    /// with many clients reads its keys once per change, not once per session.
    private var snapshot: ReconciliationSet?
    private var snapshotAtMs: Int64 = .min
    private var lastSweepMs: Int64 = .min
    /// Keyed hashes of client addresses: per relay process, never stored.
    private let depositorKey = Sodium.randomBytes(32)
    /// Counters for `yaok-relay stats` (taken, handed, purged).
    private(set) var taken = 0
    private(set) var handed = 0
    private(set) var purged = 0

    /// Bytes of carried packets handed to one client address per clock hour, over all its
    /// sessions (32 MiB by default). Sessions are cheap to make (64 connections an address,
    /// a new one as soon as one ends), so the 4 MiB a session alone let one address pull the
    /// relay's whole store again and again; a recipient's own carried mail is far less.
    let handedBytesPerAddressPerHour: Int
    /// This hour's bytes handed per address (keyed hashes, as for deposits), in memory; the
    /// map is emptied when the clock hour changes, so it holds at most the addresses met
    /// within one hour.
    private var handedThisHour: [CarryDepositor: Int] = [:]
    private var handedHour: Int64 = .min

    init(store: RelayCarryStore, policy: CarryPolicy, handedBytesPerAddressPerHour: Int = 32 << 20) throws {
        try policy.validate()
        self.store = store
        self.policy = policy
        self.handedBytesPerAddressPerHour = handedBytesPerAddressPerHour
    }

    /// The quota's depositor for a client's IPv4 address: BLAKE2b-128 keyed with a secret
    /// this process drew at start. The store keeps it beside each packet (for the quota and
    /// the fair eviction); without the secret it names no address.
    func depositor(address: UInt32) -> CarryDepositor {
        let bytes: [UInt8] = [UInt8(address >> 24), UInt8(address >> 16 & 0xff), UInt8(address >> 8 & 0xff), UInt8(address & 0xff)]
        let token = Sodium.blake2b([bytes[...]], key: depositorKey, outputLength: 16)
        return (try? CarryDepositor(token)) ?? CarryDepositor.random()
    }

    var sessions: Int { meetings.count }

    /// Meetings at once, at most: each holds up to a reconciliation's lists and 2,048
    /// offered identities, so this bounds the carrier's memory whatever the number of
    /// connections. When they are all taken, a new session's meeting displaces the oldest
    /// meeting of the /24 holding the most, if that /24 holds more than the newcomer's
    /// (plus one); otherwise the new session is not met (its CARRY frames get no answer, as
    /// from a relay that does not carry) and meets in a later session. So one /24 (up to
    /// 256 connections) cannot keep every other client from meeting the relay.
    static let maxMeetings = 256

    /// The /24 of each meeting's client and the order meetings opened in (for displacing).
    private var meetingPrefix: [UInt64: (prefix: UInt32, opened: UInt64)] = [:]
    private var prefixMeetings: [UInt32: Int] = [:]
    private var openedCount: UInt64 = 0

    func open(_ session: UInt64, address: UInt32) {
        guard meetings[session] == nil else { return }
        let prefix = address & 0xFFFF_FF00
        if meetings.count >= Self.maxMeetings {
            let own = prefixMeetings[prefix] ?? 0
            guard let heaviest = prefixMeetings.max(by: { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }),
                  heaviest.value > own + 1,
                  let victim = meetingPrefix.filter({ $0.value.prefix == heaviest.key }).min(by: { $0.value.opened < $1.value.opened })
            else { return }
            close(victim.key)
        }
        meetings[session] = RelayCarryMeeting(depositor: depositor(address: address))
        openedCount += 1
        meetingPrefix[session] = (prefix, openedCount)
        prefixMeetings[prefix, default: 0] += 1
    }

    func close(_ session: UInt64) {
        meetings[session] = nil
        guard let (prefix, _) = meetingPrefix.removeValue(forKey: session) else { return }
        let left = (prefixMeetings[prefix] ?? 1) - 1
        prefixMeetings[prefix] = left > 0 ? left : nil
    }

    /// One CARRY payload from a session; returns the payloads to send back. Messages that
    /// do not fit the meeting are ignored or refused, as on a link (§12.2); a
    /// reconciliation message §11 refuses ends that reconciliation. Only storage failures
    /// throw.
    func receive(_ message: CarryLinkMessage, from session: UInt64, nowMs: Int64) throws -> [CarryLinkMessage] {
        guard var meeting = meetings[session] else { return [] }
        try sweepIfDue(nowMs)
        var out: [CarryLinkMessage] = []
        defer { meetings[session] = meeting }
        switch message {
        case .reconcile(let bytes): try reconcile(bytes, &meeting, &out, nowMs)
        case .offer(let entries): try answerOffer(entries, &meeting, &out, nowMs)
        case .request(let ids):
            for id in ids where meeting.offered.contains(id) && meeting.queued.insert(id).inserted { meeting.queue.append(id) }
            try handOver(&meeting, &out, nowMs)
        case .carried(let packet): try take(packet, &meeting, &out, nowMs)
        case .taken(let ids), .refused(let ids):
            // The relay keeps its wait-phase copy either way (the recipient's claim deletes it).
            for id in ids where meeting.offered.contains(id) {
                meeting.settled.insert(id)
                if let size = meeting.awaiting.removeValue(forKey: id) {
                    meeting.awaitingBytes -= size
                    if case .taken = message { handed += 1 }
                }
            }
            try handOver(&meeting, &out, nowMs)
        case .purge(let record):
            let gone = try store.purgeCarried(record, nowMs: nowMs, policy: policy)
            purged += gone.count
            if !gone.isEmpty { snapshot = nil }
        }
        return out
    }

    // MARK: - Reconciliation

    private func reconcile(_ bytes: [UInt8], _ meeting: inout RelayCarryMeeting, _ out: inout [CarryLinkMessage], _ nowMs: Int64) throws {
        if meeting.reconciler?.isFinished ?? true {
            // A new reconciliation: at session start, and when the client has new packets.
            guard meeting.reconciliations < RelayCarryMeeting.maxReconciliations else { return }
            meeting.reconciliations += 1
            meeting.reconciler = try Reconciler(store: try keys(nowMs), role: .responder,
                                                parameters: try .standard(idLength: CarryLinkMessage.identityLength),
                                                hash: ReconciliationBLAKE2b())
        }
        guard var reconciler = meeting.reconciler else { return }
        let step: Reconciler.Step
        do {
            step = try reconciler.receive(bytes)
        } catch {
            // Refused by §11: that reconciliation ends (finished, so the next opening starts a new one).
            meeting.reconciler = nil
            return
        }
        switch step {
        case .send(let b), .finish(let b): out.append(.reconcile(b))
        case .finished, .budgetExhausted, .idle: break
        }
        try offer(reconciler.have, &meeting, &out, nowMs)
        // A finished reconciliation's lists are let go (the next opening starts afresh).
        meeting.reconciler = reconciler.isFinished ? nil : reconciler
    }

    /// Live keys in §10.9's order, re-read when the store changed or a minute passed (what
    /// expired meanwhile, and other relays' writes to a shared store).
    private func keys(_ nowMs: Int64) throws -> ReconciliationSet {
        if let snapshot, nowMs >= snapshotAtMs, nowMs - snapshotAtMs < 60_000 { return snapshot }
        let held = try store.carriedKeys(nowMs: nowMs, limit: policy.maxPackets + 1)
        let items = try held.map {
            try ReconciliationItem(expiry: UInt64($0.expiresAtMs / CarriedPacket.hourMs), id: $0.id,
                                   idLength: CarryLinkMessage.identityLength)
        }
        let set = try ReconciliationSet(items, idLength: CarryLinkMessage.identityLength)
        snapshot = set
        snapshotAtMs = nowMs
        return set
    }

    // MARK: - Offers, requests, hand-overs

    private func offer(_ ids: [[UInt8]], _ meeting: inout RelayCarryMeeting, _ out: inout [CarryLinkMessage], _ nowMs: Int64) throws {
        let room = RelayCarryMeeting.maxOffered - meeting.offered.count
        guard room > 0 else { return }
        var candidates = ids.filter { !meeting.offered.contains($0) && !meeting.settled.contains($0) }
        if candidates.count > room {
            candidates.shuffle()
            candidates.removeLast(candidates.count - room)
        }
        var fresh: [CarriedPacket] = []
        for id in candidates {
            if let packet = try store.carriedPacket(id), packet.expiresAtMs > nowMs { fresh.append(packet) }
        }
        fresh.sort { a, b in
            a.expiresAtMs != b.expiresAtMs ? a.expiresAtMs < b.expiresAtMs : a.identity.lexicographicallyPrecedes(b.identity)
        }
        // Every copy the relay holds is in the wait phase: shown with budget 1.
        let entries = fresh.map {
            CarryOffer(identity: $0.identity, routingTag: $0.routingTag, copyBudget: 1, claimHash: $0.claimHash)
        }
        meeting.offered.formUnion(entries.map(\.identity))
        for start in stride(from: 0, to: entries.count, by: CarryLinkMessage.maxEntries) {
            out.append(.offer(Array(entries[start..<min(start + CarryLinkMessage.maxEntries, entries.count)])))
        }
    }

    /// Asks for every offered packet it does not hold (any budget: it keeps a wait-phase
    /// copy), within the client's hourly quota and 2,048 outstanding; answers an offer of a
    /// packet whose claim it remembers with the claim (§12.3 step 7).
    private func answerOffer(_ entries: [CarryOffer], _ meeting: inout RelayCarryMeeting, _ out: inout [CarryLinkMessage], _ nowMs: Int64) throws {
        var wanted: [[UInt8]] = []
        var claims: [[UInt8]] = []
        let used = try store.carryQuotaUsed(meeting.depositor, nowMs: nowMs).packets
        var quotaLeft = policy.depositorPacketsPerHour - used - meeting.asked.count
        for e in entries where !meeting.asked.contains(e.identity) && !meeting.settled.contains(e.identity) {
            if let claim = try store.rememberedClaim(hash: e.claimHash, nowMs: nowMs) {
                claims.append(claim)
                continue
            }
            guard quotaLeft > 0, !meeting.asksStopped, meeting.asked.count + wanted.count < RelayCarryMeeting.maxAsked,
                  try !store.holdsCarried(e.identity) else { continue }
            quotaLeft -= 1
            wanted.append(e.identity)
        }
        for start in stride(from: 0, to: claims.count, by: PurgeRecord.maxClaims) {
            out.append(.purge(try PurgeRecord(claims: Array(claims[start..<min(start + PurgeRecord.maxClaims, claims.count)]))))
        }
        guard !wanted.isEmpty else { return }
        meeting.asked.formUnion(wanted)
        out.append(.request(wanted))
    }

    /// Hands over what was asked for, in order: a copy with budget 1 and the hop limit less
    /// one; the relay keeps its own (§12.3 step 4, the wait phase).
    private func handOver(_ meeting: inout RelayCarryMeeting, _ out: inout [CarryLinkMessage], _ nowMs: Int64) throws {
        let hour = nowMs / CarriedPacket.hourMs
        if hour != handedHour {
            handedHour = hour
            handedThisHour = [:]
        }
        while !meeting.queue.isEmpty, meeting.awaitingBytes < RelayCarryMeeting.windowBytes,
              meeting.bytesHanded < RelayCarryMeeting.sessionBytes,
              handedThisHour[meeting.depositor, default: 0] < handedBytesPerAddressPerHour {
            let id = meeting.queue.removeFirst()
            guard !meeting.settled.contains(id), meeting.awaiting[id] == nil,
                  let held = try store.carriedPacket(id), held.expiresAtMs > nowMs else { continue }
            let given = try CarriedPacket(hopLimit: held.hopLimit > 0 ? held.hopLimit - 1 : 0, copyBudget: 1,
                                          expiryHour: held.expiryHour, routingTag: held.routingTag,
                                          claimHash: held.claimHash, payload: held.payload)
            let size = CarriedPacket.headerLength + given.payload.count
            out.append(.carried(given))
            meeting.awaiting[id] = size
            meeting.awaitingBytes += size
            meeting.bytesHanded += size
            handedThisHour[meeting.depositor, default: 0] += size
        }
    }

    /// A packet the client hands over: only one asked for; stored as a wait-phase copy
    /// (budget 1) within the client's quota and the caps, evicting as a node does (§10.9).
    private func take(_ packet: CarriedPacket, _ meeting: inout RelayCarryMeeting, _ out: inout [CarryLinkMessage], _ nowMs: Int64) throws {
        let id = packet.identity
        guard meeting.asked.remove(id) != nil else { return out.append(.refused([id])) }
        meeting.settled.insert(id)
        let kept: CarriedPacket
        do {
            kept = try CarriedPacket(hopLimit: packet.hopLimit, copyBudget: 1, expiryHour: packet.expiryHour,
                                     routingTag: packet.routingTag, claimHash: packet.claimHash, payload: packet.payload)
        } catch {
            return out.append(.refused([id]))
        }
        let result: RelayCarryTake
        do {
            result = try store.takeCarried(kept.encode(), from: meeting.depositor, nowMs: nowMs, policy: policy)
        } catch let error as YaOKError where error.code != .storage && error.code != .diskFull && error.code != .corruptStore {
            // Expired, too far ahead, malformed: the packet's fault, not the store's.
            return out.append(.refused([id]))
        }
        switch result {
        case .taken:
            taken += 1
            snapshot = nil
            out.append(.taken([id]))
        case .duplicate, .purged: out.append(.taken([id]))
        case .overQuota, .full:
            meeting.asksStopped = true
            out.append(.refused([id]))
        }
    }

    // MARK: - Sweep

    /// Expired packets, claims and quota rows, at most every ten minutes.
    func sweepIfDue(_ nowMs: Int64) throws {
        guard lastSweepMs == .min || nowMs - lastSweepMs >= 600_000 || nowMs < lastSweepMs else { return }
        lastSweepMs = nowMs
        if try store.sweepCarried(nowMs: nowMs) > 0 { snapshot = nil }
    }
}
