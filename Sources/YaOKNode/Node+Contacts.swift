import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Contacts (US-010, US-011, US-012, US-031). All need the node unlocked.
extension Node {
    /// Decodes and checks a card without storing anything: what "add" would add, and
    /// whether a contact already holds its keys (`existingContactID`: the contact with the
    /// same keys, or one that shares either key, which "add" would refuse). Bad card:
    /// `invalidCard`; one's own card: `invalidArgument`, "This is your own contact card".
    public func previewContact(card text: String) throws -> ContactPreview {
        let card = try ContactCard(text: text)
        return try withUnlocked { store, keys, _ in
            try Node.refuseOwnCard(card, keys)
            let existing = try contactHoldingKeys(of: card, store, keys)
            return ContactPreview(name: card.name, publicIdentity: card.publicIdentity, existingContactID: existing?.id)
        }
    }

    /// Adds the person on `card`. Each X25519 key and each Ed25519 key belongs to at most
    /// one contact (docs/PROTOCOL.md §2), so that a message's sender key and a link's peer
    /// name one contact at most: already a contact, or a card that shares a key with one,
    /// is `contactExists` ("<name> is already in your contacts"), and nothing changes. One's
    /// own card (or one sharing a key with it) is `invalidArgument`.
    ///
    /// A version 2 card of an existing contact with the same keys whose prekey is newer than
    /// the one held (and the contact has announced no receiver key yet) refreshes the prekey
    /// its first messages are sealed to (§13.4): still `contactExists`, its message saying
    /// "…; their card's newer prekey was saved". Nothing else changes (not the name).
    public func addContact(card text: String) throws -> Contact {
        let card = try ContactCard(text: text)
        let outcome = try withUnlockedEngine { engine, store, keys -> AddOutcome in
            try Node.refuseOwnCard(card, keys)
            if let existing = try contactHoldingKeys(of: card, store, keys) {
                guard existing.publicIdentity == card.publicIdentity else {
                    return .exists("This card shares a key with \(existing.name), who is already in your contacts")
                }
                var ring = try store.receiverKeyRing(contactID: existing.id, cipher: keys.cipher)
                if let prekey = card.prekey, ring.learnPrekey(prekey, nowMs: engine.now) {
                    try store.saveReceiverKeyRing(ring, contactID: existing.id, cipher: keys.cipher)
                    return .exists("\(existing.name) is already in your contacts; their card's newer prekey was saved")
                }
                return .exists("\(existing.name) is already in your contacts")
            }
            let id = try store.insertContact(card, lookup: Node.lookup(card.publicIdentity, keys), cipher: keys.cipher, now: now)
            if let prekey = card.prekey {
                // The first messages go to this prekey, not the long-term key (§13.4).
                var ring = try store.receiverKeyRing(contactID: id, cipher: keys.cipher)
                ring.learnPrekey(prekey, nowMs: engine.now)
                try store.saveReceiverKeyRing(ring, contactID: id, cipher: keys.cipher)
            }
            engine.effects.events.append(.contactsChanged(contactID: id))
            // A link from this person may already be open: it now counts as theirs.
            engine.contactsChanged(store, keys)
            return .added(try loadContact(id, store, keys, engine.online))
        }
        switch outcome {
        case .added(let contact): return contact
        case .exists(let message): throw YaOKError(.contactExists, message)
        }
    }

    /// What `addContact` did: a refresh of a held prekey is committed even though the add
    /// is refused, so the refusal is returned out of the transaction, not thrown in it.
    private enum AddOutcome: Sendable {
        case added(Contact)
        case exists(String)
    }

    /// Every contact, by name (case-insensitive), then id.
    public func contacts() throws -> [Contact] {
        try withUnlocked { store, keys, s in
            try store.contactRecords(cipher: keys.cipher)
                .map { Node.contact($0, s.delivery.online) }
                .sorted { ($0.name.lowercased(), $0.id) < ($1.name.lowercased(), $1.id) }
        }
    }

    /// The signed contact card of contact `id`, as it was scanned, read back from the
    /// encrypted store (apps need not keep cards themselves). `notFound` if there is none.
    public func contactCard(_ id: Int64) throws -> String {
        try withUnlocked { store, keys, _ in
            guard let card = try store.contactCard(id, cipher: keys.cipher) else {
                throw YaOKError(.notFound, "No such contact")
            }
            return card
        }
    }

    /// One contact; `notFound` if there is none with `id`.
    public func contact(_ id: Int64) throws -> Contact {
        try withUnlocked { store, keys, s in try loadContact(id, store, keys, s.delivery.online) }
    }

    /// The longest query `findContact` takes (UTF-8 bytes): more than any name, user ID or
    /// fingerprint with white space around it. Longer is refused before any work.
    public static let maxQueryBytes = 4096

    /// The one contact that `query` names: its id (digits), user ID, a fingerprint prefix of
    /// at least 4 hex digits (spaces ignored), or its name (case-insensitive). None:
    /// `notFound`, whose message suggests close names ("Did you mean "Bob"?"); several: `invalidArgument` asking for something more specific; a query
    /// over `maxQueryBytes`: `invalidArgument`.
    public func findContact(_ query: String) throws -> Contact {
        guard query.utf8.count <= Node.maxQueryBytes else {
            throw YaOKError(.invalidArgument, "A contact query is at most \(Node.maxQueryBytes) bytes")
        }
        let q = query.trimmingWhitespace()
        let all = try contacts()
        // Digits name an ID first; a fingerprint prefix can be all digits too ("1234ABCD…"
        // starts "1234"), so a number that is no ID falls through to the other matches.
        if let id = Int64(q), let byID = all.first(where: { $0.id == id }) { return byID }
        let hex = q.replacingSpaces().uppercased()
        let isHex = hex.count >= 4 && hex.allSatisfy { $0.isHexDigit }
        let matches = all.filter {
            $0.userID == q.lowercased() || (isHex && $0.fingerprint.hex.hasPrefix(hex)) || $0.name.lowercased() == q.lowercased()
        }
        guard let first = matches.first else {
            let close = Node.closeNames(to: q, in: all.map(\.name))
            let hint = close.isEmpty ? "" : ". Did you mean " + Node.orList(close.map { "\"\($0)\"" }) + "?"
            throw YaOKError(.notFound, "No contact matches \"\(q)\"" + hint)
        }
        guard matches.count == 1 else {
            throw YaOKError(.invalidArgument, "\"\(q)\" matches \(matches.count) contacts; use the ID or more of the fingerprint")
        }
        return first
    }

    /// Marks a contact verified after comparing fingerprints out of band (US-031).
    public func verifyContact(_ id: Int64) throws {
        try withUnlocked { store, _, _ in
            guard try store.contactExists(id) else { throw YaOKError(.notFound, "No such contact") }
            try store.db.transaction {
                try store.setContactVerified(id)
                try logSecurityEvent(store, .contactVerified, "contact \(id)")
            }
        }
        events.emit(.contactsChanged(contactID: id))
    }

    /// Renames a contact (2-50 characters, `invalidName` otherwise).
    @discardableResult
    public func renameContact(_ id: Int64, to name: String) throws -> Contact {
        let name = try DisplayName.validate(name)
        let contact = try withUnlocked { store, keys, s -> Contact in
            guard try store.contactExists(id) else { throw YaOKError(.notFound, "No such contact") }
            try store.renameContact(id, to: name, cipher: keys.cipher)
            return try loadContact(id, store, keys, s.delivery.online)
        }
        events.emit(.contactsChanged(contactID: id))
        return contact
    }

    /// Deletes a contact and its public keys (US-012). By default the messages stay,
    /// readable under the conversation id (= the contact id), and the person can no longer
    /// be messaged; `deleteMessages: true` deletes them too. Either way no row is orphaned.
    public func deleteContact(_ id: Int64, deleteMessages: Bool = false) throws {
        try withUnlockedEngine { engine, store, keys in
            guard try store.contactExists(id) else { throw YaOKError(.notFound, "No such contact") }
            try store.deleteContact(id, withMessages: deleteMessages)
            engine.online[id] = nil
            engine.effects.events.append(.contactsChanged(contactID: id))
            engine.contactsChanged(store, keys)
        }
    }

    /// For transports: the contact is connected now over `transport` ("Bluetooth", "LAN",
    /// "Relay"), or no longer connected when nil. Updates the stored last-seen time.
    package func setContactConnection(_ id: Int64, transport: String?) throws {
        try withUnlocked { store, _, s in
            guard try store.contactExists(id) else { throw YaOKError(.notFound, "No such contact") }
            if let transport {
                s.delivery.online[id] = transport
                try store.setLastSeen(id, time: now, transport: transport)
            } else if let previous = s.delivery.online.removeValue(forKey: id) {
                try store.setLastSeen(id, time: now, transport: previous)
            }
        }
        events.emit(.contactsChanged(contactID: id))
    }

    // MARK: -

    /// Names close to `query` for "did you mean": case-insensitive edit distance (see
    /// `editDistance`) at most 1 for queries of up to 4 characters, 2 up
    /// to 8, else 3; or a name that starts with the query. Best first, at most 3.
    static func closeNames(to query: String, in names: [String]) -> [String] {
        let q = Array(query.lowercased())
        guard !q.isEmpty else { return [] }
        let allowed = q.count <= 4 ? 1 : (q.count <= 8 ? 2 : 3)
        var scored: [(distance: Int, name: String)] = []
        for name in Set(names) {
            let n = Array(name.lowercased())
            let d = n.starts(with: q) ? 0 : editDistance(q, n, atMost: allowed)
            if d <= allowed { scored.append((d, name)) }
        }
        return scored.sorted { ($0.distance, $0.name) < ($1.distance, $1.name) }.prefix(3).map(\.name)
    }

    /// Edit distance counting an insertion, a deletion, a substitution or two neighbours
    /// swapped ("Bbo" for "Bob") as one edit; `atMost + 1` as soon as it must exceed `atMost`.
    static func editDistance(_ a: [Character], _ b: [Character], atMost: Int) -> Int {
        guard abs(a.count - b.count) <= atMost else { return atMost + 1 }
        var before: [Int] = []
        var previous = Array(0...b.count)
        for i in a.indices {
            var current = [i + 1] + [Int](repeating: 0, count: b.count)
            for j in b.indices {
                current[j + 1] = Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (a[i] == b[j] ? 0 : 1))
                if i > 0, j > 0, a[i] == b[j - 1], a[i - 1] == b[j] {
                    current[j + 1] = Swift.min(current[j + 1], before[j - 1] + 1)
                }
            }
            if current.allSatisfy({ $0 > atMost }) { return atMost + 1 }
            before = previous
            previous = current
        }
        return previous[b.count]
    }

    /// "A", "A or B", "A, B or C".
    static func orList(_ items: [String]) -> String {
        guard items.count > 1, let last = items.last else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " or " + last
    }

    static func lookup(_ keys: PublicIdentity, _ unlocked: UnlockedKeys) -> [UInt8] {
        unlocked.cipher.lookup(Array("YaOK-peer-v1".utf8) + keys.keyBytes)
    }

    private static func refuseOwnCard(_ card: ContactCard, _ keys: UnlockedKeys) throws {
        let own = keys.identity.publicIdentity
        guard card.publicIdentity.encryptionKey != own.encryptionKey, card.publicIdentity.signingKey != own.signingKey else {
            throw YaOKError(.invalidArgument, "This is your own contact card")
        }
    }

    /// The contact with the card's keys (one indexed lookup), else one that holds either of
    /// them (a scan: contacts are few, and this runs only on preview and add).
    private func contactHoldingKeys(of card: ContactCard, _ store: Store, _ keys: UnlockedKeys) throws -> Store.ContactRecord? {
        if let id = try store.conversationID(lookup: Node.lookup(card.publicIdentity, keys)),
           let exact = try store.contactRecords(cipher: keys.cipher, id: id).first {
            return exact
        }
        let theirs = card.publicIdentity
        return try store.contactRecords(cipher: keys.cipher).first {
            $0.publicIdentity.encryptionKey == theirs.encryptionKey || $0.publicIdentity.signingKey == theirs.signingKey
        }
    }

    private func loadContact(_ id: Int64, _ store: Store, _ keys: UnlockedKeys, _ online: [Int64: String]) throws -> Contact {
        guard let record = try store.contactRecords(cipher: keys.cipher, id: id).first else {
            throw YaOKError(.notFound, "No such contact")
        }
        return Node.contact(record, online)
    }

    private static func contact(_ r: Store.ContactRecord, _ online: [Int64: String]) -> Contact {
        let connection: ConnectionStatus
        if let transport = online[r.id] {
            connection = .online(transport: transport)
        } else if let seen = r.lastSeen {
            connection = .lastSeen(seen)
        } else {
            connection = .neverConnected
        }
        return Contact(id: r.id, name: r.name, publicIdentity: r.publicIdentity, verified: r.verified,
                       addedAt: r.addedAt, connection: connection)
    }
}

extension String {
    func replacingSpaces() -> String { String(unicodeScalars.filter { !$0.properties.isWhitespace }) }
}
