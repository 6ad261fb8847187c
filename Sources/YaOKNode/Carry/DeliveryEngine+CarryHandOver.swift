import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Hand-overs in a meeting (docs/PROTOCOL.md §12.3 steps 4 to 6): what was asked for goes
/// with half the budget, what arrives is taken, opened (one's own) or refused, and the
/// answers settle the giver's budget.
extension DeliveryEngine {
    /// Hands over what the peer asked for, in the order asked, while the window and the
    /// meeting's byte budget allow: a packet with budget b ≥ 2 (and hop limit left) goes
    /// with ⌊b/2⌋ and this side keeps the rest once it is taken; one in the wait phase goes
    /// with budget 1 and this side keeps its own (the requester says it is its recipient).
    /// `b` is what is not already promised to copies awaiting an answer on other links (two
    /// meetings at once, over Bluetooth and the LAN, must not both give half of the same 8).
    mutating func handOverQueued(on linkID: UInt64, _ store: Store) throws {
        guard var session = carry.sessions[linkID] else { return }
        defer { carry.sessions[linkID] = session }
        var rng = SystemRandomNumberGenerator()
        // The node's hourly hand-over bound (links only: a relay session is one the user
        // configured, bounded per session).
        let hour = now / CarriedPacket.hourMs
        if carry.handedHour != hour { (carry.handedHour, carry.handedBytes) = (hour, 0) }
        while !session.queue.isEmpty, session.awaitingBytes < CarrySession.windowBytes,
              session.bytesHanded < CarrySession.encounterBytes,
              session.toRelay || carry.handedBytes < carry.handOverBytesPerHour {
            let id = session.queue.removeFirst()
            guard !session.settled.contains(id), session.awaiting[id] == nil,
                  let held = try store.carriedPacket(id), held.expiresAtMs > now else { continue }
            // Offered before the link was recognised as the recipient's (a contact holding
            // more than 256 cards, whose proof came after its probe): the message goes routed.
            if let peer = links[linkID]?.contactID, try store.ownCarriedRecipient(packetID: id) == peer {
                session.settled.insert(id)
                continue
            }
            let promised = carry.sessions.reduce(0) { $0 + ($1.key == linkID ? 0 : Int($1.value.awaiting[id]?.given ?? 0)) }
            let free = Int(min(held.copyBudget, CopyBudget.maximum)) - promised
            // A relay keeps wait-phase copies (§12.9): it gets budget 1 and costs ours nothing.
            let spreading = held.copyBudget >= 2 && held.hopLimit > 0 && !session.toRelay
            // Half of it is promised elsewhere and not answered yet: not now.
            if spreading, free < 2 { continue }
            let packet = try CarriedPacket(hopLimit: held.hopLimit, copyBudget: UInt8(max(1, free)),
                                           expiryHour: held.expiryHour, routingTag: held.routingTag,
                                           claimHash: held.claimHash, payload: held.payload)
            let given: CarriedPacket
            let keptHop: UInt8
            let givenBudget: UInt8
            if spreading, let split = packet.handOver(using: &rng) {
                (given, keptHop, givenBudget) = (split.given, split.kept.hopLimit, split.given.copyBudget)
            } else {
                given = try CarriedPacket(hopLimit: packet.hopLimit > 0 ? packet.hopLimit - 1 : 0, copyBudget: 1,
                                          expiryHour: packet.expiryHour, routingTag: packet.routingTag,
                                          claimHash: packet.claimHash, payload: packet.payload)
                (keptHop, givenBudget) = (packet.hopLimit, 0)
            }
            let size = CarriedPacket.headerLength + given.payload.count
            guard size <= LinkPayload.maxCarriedPacketLength else { continue }
            try sendOnLink(.carry(.carried(given)), on: linkID)
            session.awaiting[id] = (givenBudget, keptHop, size)
            session.awaitingBytes += size
            session.bytesHanded += size
            if !session.toRelay { carry.handedBytes += size }
        }
    }

    /// The peer's answer to packets handed over: taken (keep the rest of the budget) or
    /// refused (keep it all). Either way they are not offered on this link again.
    mutating func receiveAnswer(_ ids: [[UInt8]], taken: Bool, on linkID: UInt64, _ store: Store) throws {
        guard var session = carry.sessions[linkID] else { return }
        // Only ids offered on this link are remembered, so a peer cannot grow the set.
        for id in ids where session.offered.contains(id) {
            session.settled.insert(id)
            guard let (given, keptHop, size) = session.awaiting.removeValue(forKey: id) else { continue }
            session.awaitingBytes -= size
            guard taken else { continue }
            // What is left of the budget now (another link may have taken its share meanwhile).
            if given > 0, let entry = try store.carriedEntry(id) {
                let left = max(1, Int(min(entry.copyBudget, CopyBudget.maximum)) - Int(given))
                try store.updateCarried(id, copyBudget: UInt8(left), hopLimit: keptHop)
            }
            carry.counters.packetsHandedOn += 1
            session.activity = true
        }
        carry.sessions[linkID] = session
        try handOverQueued(on: linkID, store)
    }

    /// A packet handed to us. Only what we asked for is taken. Ours (unlocked): opened and
    /// delivered, never stored. Else, when this link carries, taken into the store (§10.9;
    /// a locked node recognises its mail after unlock). Answered taken or refused.
    mutating func receiveCarried(_ packet: CarriedPacket, on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard var session = carry.sessions[linkID] else { return }
        let id = packet.identity
        let wasAsked = session.asked.remove(id) != nil
        // Never offered back to the peer it came from (only asked-for ids: bounded).
        if wasAsked { session.settled.insert(id) }
        carry.sessions[linkID] = session
        guard wasAsked else { return try answer(id, taken: false, on: linkID) }
        let t = now
        if (try? packet.checkTime(nowMs: t)) == nil {
            carry.counters.packetsRefused += 1
            return try answer(id, taken: false, on: linkID)
        }
        if let keys, let contact = try carriedTags(store, keys)?.sender(of: packet) {
            if try store.isPurged(claimHash: packet.claimHash, nowMs: t) { return try answer(id, taken: true, on: linkID) }
            let opened = try openOwnCarried(packet, from: contact, store, keys)
            carry.counters.packetsTaken += opened ? 1 : 0
            carry.sessions[linkID]?.activity = true
            return try answer(id, taken: opened, on: linkID)
        }
        guard session.carries else { return try answer(id, taken: false, on: linkID) }
        let result: CarryTake
        do {
            result = try store.takeCarried(packet.encode(), from: session.depositor, nowMs: t, policy: carry.policy)
        } catch let error as YaOKError where error.code != .storage && error.code != .diskFull {
            carry.counters.packetsRefused += 1
            return try answer(id, taken: false, on: linkID)
        }
        switch result {
        case .taken:
            carry.counters.packetsTaken += 1
            carry.sessions[linkID]?.activity = true
            try answer(id, taken: true, on: linkID)
            // New in the store: offered at once to the relays we meet (they are always on).
            for relay in carry.relayMeetings.keys.sorted() where relay != linkID { try offer([id], on: relay, store) }
        case .duplicate, .purged:
            try answer(id, taken: true, on: linkID)
        case .overQuota, .full:
            carry.counters.packetsRefused += 1
            carry.sessions[linkID]?.activity = true
            if var s = carry.sessions[linkID] {
                s.minSpreadBudget = result == .overQuota ? Int.max : max(s.minSpreadBudget, Int(packet.copyBudget) + 1)
                carry.sessions[linkID] = s
            }
            try answer(id, taken: false, on: linkID)
        }
    }

    private mutating func answer(_ id: [UInt8], taken: Bool, on linkID: UInt64) throws {
        try sendOnLink(.carry(taken ? .taken([id]) : .refused([id])), on: linkID)
    }
}
