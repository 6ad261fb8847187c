import YaOKSupport
import YaOKWire

/// Settles, inside an anonymous link (`AnonymousLinkHandshake`), whether the peer is one of
/// our contacts, without telling a stranger anything stable (docs/PROTOCOL.md §5.9):
///
///     both sides at once:     probe  = filter of markers MAC(ck(me, c), "probe" || my role || h)
///     on a marker of ours:    proof  = MAC(ck(me, c), "proof" || my role || h)
///     on a valid proof of c:  our proof for c (if not yet sent); the link is now c's
///
/// `ck` is the pair's `ContactLinkKey`, `h` the handshake hash: markers and proofs are bound
/// to this link (another link has another `h`, so nothing replays or links across links), to
/// a direction (the role byte: a proof reflected back does not verify), and to the pair (only
/// the two contacts hold `ck`). A side that does not recognise us sends nothing but its probe.
///
/// Not thread-safe: it belongs to its link (the node's event thread).
public final class ContactRecognition {
    public static let probeKind: UInt8 = 0x04
    public static let proofKind: UInt8 = 0x05
    /// Proofs a side sends, and accepts, per link: false positives of the filter are rare
    /// (2^-16 per contact tested), so more than this is an attack on our hashing time.
    public static let maxProofs = 4
    static let probeContext = Array("YaOK-contact-probe-v1".utf8)
    static let proofContext = Array("YaOK-contact-proof-v1".utf8)

    public let role: LinkRole
    private let handshakeHash: [UInt8]
    private let contacts: [ContactLinkKey]
    private var probeReceived = false
    private var proofsReceived = 0
    private var sentProofFor: Set<Int> = []
    private var provenContact: Int?
    /// Set once both proofs have crossed: the link is this contact's. Nil: a carrier link.
    public private(set) var contact: PublicIdentity?

    /// `contacts` in order of preference: only the first `ContactProbeBody.capacity` go into
    /// our probe (put first the contact this link was dialled for, if any); all are tried
    /// against the peer's probe and proofs.
    public init(role: LinkRole, handshakeHash: [UInt8], contacts: [ContactLinkKey]) {
        self.role = role
        self.handshakeHash = handshakeHash
        self.contacts = contacts
    }

    private var peerRole: LinkRole { role == .initiator ? .responder : .initiator }

    /// Our probe, as a link plaintext (kind || body): 1025 bytes whoever we are.
    public func probe() -> [UInt8] {
        var filter = [UInt8](repeating: 0, count: ContactProbeBody.length)
        var weight = 0
        func set(_ p: Int) {
            let mask: UInt8 = 0x80 >> UInt8(p & 7)
            if filter[p >> 3] & mask == 0 { filter[p >> 3] |= mask; weight += 1 }
        }
        for key in contacts.prefix(ContactProbeBody.capacity) {
            ContactProbeBody.positions(key.mac(Self.probeContext, role: role, handshakeHash: handshakeHash)).forEach(set)
        }
        while weight < ContactProbeBody.setBits {
            let random = Sodium.randomBytes(512)
            for i in stride(from: 0, to: random.count, by: 2) where weight < ContactProbeBody.setBits {
                set((Int(random[i]) << 8 | Int(random[i + 1])) & (ContactProbeBody.bitCount - 1))
            }
        }
        return [Self.probeKind] + filter
    }

    /// Takes the body of the peer's probe; returns our proofs to send (link plaintexts), one
    /// per contact whose marker the filter holds, at most `maxProofs`. A second probe, or a
    /// body that does not decode → `malformedPacket` (the link stays, §5.4).
    public func receiveProbe(_ body: ArraySlice<UInt8>) throws -> [[UInt8]] {
        guard !probeReceived else { throw YaOKError(.malformedPacket, "A second contact probe on one link") }
        let filter = try ContactProbeBody(decoding: body)
        probeReceived = true
        var out: [[UInt8]] = []
        for (index, key) in contacts.enumerated() where out.count < Self.maxProofs && contact == nil {
            let marker = key.mac(Self.probeContext, role: peerRole, handshakeHash: handshakeHash)
            guard filter.containsAll(ContactProbeBody.positions(marker)) else { continue }
            if let proof = proofIfNotSent(index) { out.append(proof) }
        }
        return out
    }

    /// Takes the body of a peer's proof. A valid one (from contact c) makes us answer with our
    /// own proof for c if we have not sent it, and binds the link to c. Errors, after which
    /// only this payload is dropped: `malformedPacket` (wrong length, more than `maxProofs`),
    /// `senderAuthFailed` (it is no proof of any contact of ours for this link and direction:
    /// a stranger's false positive, a tampered or replayed proof).
    public func receiveProof(_ body: ArraySlice<UInt8>) throws -> [[UInt8]] {
        let proof = try ContactProofBody(decoding: body)
        proofsReceived += 1
        guard proofsReceived <= Self.maxProofs else {
            throw YaOKError(.malformedPacket, "More than \(Self.maxProofs) contact proofs on one link")
        }
        guard contact == nil, provenContact == nil else { return [] }   // bound already: one contact per link
        var found: Int?
        for (index, key) in contacts.enumerated() {
            // Every contact is tried, matched or not, so the time says nothing about which.
            let expected = key.mac(Self.proofContext, role: peerRole, handshakeHash: handshakeHash)
            if Sodium.constantTimeEqual(expected, proof.mac), found == nil { found = index }
        }
        guard let index = found else {
            throw YaOKError(.senderAuthFailed, "The contact proof is none of our contacts' for this link")
        }
        provenContact = index
        // Uncapped: the contact proved itself, so our answer is owed even after false positives.
        let reply = proofIfNotSent(index, capped: false)
        contact = contacts[index].peer
        return reply.map { [$0] } ?? []
    }

    private func proofIfNotSent(_ index: Int, capped: Bool = true) -> [UInt8]? {
        guard !sentProofFor.contains(index), !capped || sentProofFor.count < Self.maxProofs else { return nil }
        sentProofFor.insert(index)
        return [Self.proofKind] + contacts[index].mac(Self.proofContext, role: role, handshakeHash: handshakeHash)
    }
}
