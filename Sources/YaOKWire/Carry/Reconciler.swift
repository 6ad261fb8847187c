import YaOKSupport

/// One side of an encounter's reconciliation (docs/PROTOCOL.md, "Reconciliation"): range-
/// based set reconciliation in the manner of negentropy, written for this protocol. The
/// initiator opens with one fingerprint of its whole store (equal stores settle in that
/// message and a 3-byte answer); a range whose fingerprints differ is split into
/// `buckets` sub-ranges, or listed id by id when it holds fewer than `idListThreshold`
/// items, until the initiator has seen every difference; an id list is answered with the
/// difference alone. The initiator tells the responder the rest of what it found with
/// have/want lists, so both end knowing what to send and what to expect. The side with
/// nothing left to ask says "settled" (`.finish`), after which both are `isFinished`.
///
/// Driving it: the initiator calls `initiate()`, then, for each message from the peer,
/// `receive` and `takeHaveWant()` until nil, and sends the lists before the bytes of a
/// `.send` or `.finish` step. The responder only calls `receive`.
///
/// Pure state: bytes in, bytes out, no I/O and no clock, so the engine, the simulator and
/// the tests drive it alike. Work per message is bounded by the limits in `parameters`
/// (ranges, ids, message bytes) times a binary search over this side's store; bytes per
/// encounter by `parameters.encounterBudget`: when it is spent the side stops, and every
/// difference found so far stays valid (messages settle the order from its start, so a
/// cut-short encounter has reconciled a prefix, not nothing). Not thread-safe.
public struct Reconciler: Sendable {
    /// The link's role decides who opens (§11): the one role type of the package.
    public typealias Role = LinkRole

    public enum Step: Equatable, Sendable {
        /// Send these bytes to the peer.
        case send([UInt8])
        /// Send these bytes (zero ranges: "settled"); the exchange is over, expect no answer.
        case finish([UInt8])
        /// Nothing to send now (the responder after a have/want list).
        case idle
        /// The peer said "settled": the exchange is over, nothing to send.
        case finished
        /// This side's byte budget for the encounter is spent; what it learned stands.
        case budgetExhausted
    }

    public let role: Role
    public let parameters: ReconciliationParameters
    private let store: ReconciliationSet
    private let hash: any ReconciliationHash

    /// Ids this side holds and the peer lacks: to send.
    public private(set) var have: [[UInt8]] = []
    /// Ids the peer holds and this side lacks: to receive (or to ask for).
    public private(set) var want: [[UInt8]] = []
    private var haveSet: Set<[UInt8]> = []
    private var wantSet: Set<[UInt8]> = []
    /// What the initiator has found and not yet reported in a have/want list (ids the
    /// responder already knows of, from its own difference answers, are not reported).
    private var unreportedHave: [[UInt8]] = []
    private var unreportedWant: [[UInt8]] = []

    public private(set) var bytesSent = 0
    public private(set) var bytesReceived = 0
    public private(set) var messagesSent = 0
    private var started = false
    public private(set) var isFinished = false

    public init(store: ReconciliationSet, role: Role, parameters: ReconciliationParameters,
                hash: any ReconciliationHash) throws {
        guard store.idLength == parameters.idLength else {
            throw YaOKError(.invalidArgument, "Store ids are \(store.idLength) bytes, the parameters say \(parameters.idLength)")
        }
        self.store = store
        self.role = role
        self.parameters = parameters
        self.hash = hash
    }

    private var remainingBudget: Int { parameters.encounterBudget - bytesSent - bytesReceived }

    /// The initiator's first message: one fingerprint of the whole store (an empty id list
    /// for an empty store). At most 22 bytes.
    public mutating func initiate() throws -> Step {
        guard role == .initiator, !started else {
            throw YaOKError(.invalidArgument, "Only an initiator starts a reconciliation, once")
        }
        started = true
        let payload: ReconciliationRange.Payload = store.count == 0
            ? .idList([]) : .fingerprint(store.fingerprint(0, store.count, hash: hash))
        return send(.ranges([ReconciliationRange(upper: .infinity, payload: payload)]))
    }

    /// The peer's message, decoded strictly (a malformed one throws `malformedPacket` and
    /// the encounter should end); returns what to do next.
    public mutating func receive(_ bytes: [UInt8]) throws -> Step {
        guard !isFinished else { throw YaOKError(.invalidArgument, "Reconciliation already finished") }
        // The budget was spent by earlier messages: this one is not read (§11 step 4), so a
        // peer that goes on sending cannot make this side decode and work without end.
        let spent = remainingBudget < ReconciliationParameters.minimumMessageBytes
        bytesReceived += bytes.count
        if spent { return .budgetExhausted }
        let message = try ReconciliationMessage.decode(bytes, parameters: parameters)
        switch message {
        case .haveWant(let theirHave, let theirWant):
            guard role == .responder else { throw ReconciliationMessage.malformed("have/want list sent to the initiator") }
            for id in theirWant where store.contains(id: id) { addHave(id) }
            for id in theirHave where !store.contains(id: id) { addWant(id) }
            return remainingBudget < ReconciliationParameters.minimumMessageBytes ? .budgetExhausted : .idle
        case .ranges(let ranges):
            if role == .initiator { started = true }
            if ranges.isEmpty {
                isFinished = true
                return .finished
            }
            // A message that arrives as the budget runs out is still read to the end: what
            // it settles (id lists, differences) is learned even if no answer can be sent.
            let left = remainingBudget
            let reply = try answer(ranges, limit: min(parameters.maxMessageBytes,
                                                      max(left, ReconciliationParameters.minimumMessageBytes)))
            // Zero ranges: this side has nothing left to ask; it says so (3 bytes) and the
            // exchange is over for both. Even a spent budget allows these 3 bytes.
            if reply.isEmpty {
                isFinished = true
                guard case .send(let bytes) = send(.ranges([])) else { return .finished }
                return .finish(bytes)
            }
            guard left >= ReconciliationParameters.minimumMessageBytes else { return .budgetExhausted }
            return send(.ranges(reply))
        }
    }

    /// The initiator's have/want list of what it found since the last one, or nil when
    /// there is nothing new (or no budget left). Call after each `receive`, and send the
    /// list before (or with) the next range message: the responder can start sending
    /// what is wanted while the reconciliation goes on.
    public mutating func takeHaveWant() -> [UInt8]? {
        guard role == .initiator else { return nil }
        let room = min(parameters.maxMessageBytes, remainingBudget) - 2 - 2 * 3
        var idsLeft = min(parameters.maxIDs, max(0, room / parameters.idLength))
        let newHave = min(unreportedHave.count, idsLeft)
        idsLeft -= newHave
        let newWant = min(unreportedWant.count, idsLeft)
        guard newHave + newWant > 0 else { return nil }
        let haves = unreportedHave.prefix(newHave).sorted { $0.lexicographicallyPrecedes($1) }
        let wants = unreportedWant.prefix(newWant).sorted { $0.lexicographicallyPrecedes($1) }
        unreportedHave.removeFirst(newHave)
        unreportedWant.removeFirst(newWant)
        guard case .send(let bytes) = send(.haveWant(have: haves, want: wants)) else { return nil }
        return bytes
    }

    /// Whether every have and want found has been reported (initiator).
    public var haveWantReported: Bool { unreportedHave.isEmpty && unreportedWant.isEmpty }

    private mutating func send(_ message: ReconciliationMessage) -> Step {
        let bytes = message.encode()
        bytesSent += bytes.count
        messagesSent += 1
        return .send(bytes)
    }

    /// `report`: whether the initiator still has to tell the responder.
    private mutating func addHave(_ id: [UInt8], report: Bool = true) {
        if haveSet.insert(id).inserted {
            have.append(id)
            if report, role == .initiator { unreportedHave.append(id) }
        }
    }

    private mutating func addWant(_ id: [UInt8], report: Bool = true) {
        if wantSet.insert(id).inserted {
            want.append(id)
            if report, role == .initiator { unreportedWant.append(id) }
        }
    }

    /// What the initiator learns from the responder's id list of items[lo..<hi].
    private mutating func learn(_ theirs: [[UInt8]], _ lo: Int, _ hi: Int) {
        let theirSet = Set(theirs)
        for item in store.items[lo..<hi] where !theirSet.contains(item.id) { addHave(item.id) }
        for id in theirs where !store.contains(id: id) { addWant(id) }
    }

    /// The responder's difference between the initiator's id list and items[lo..<hi]:
    /// (ids it holds there that the list lacks, listed ids it lacks), each ascending.
    private mutating func difference(_ theirs: [[UInt8]], _ lo: Int, _ hi: Int) -> (extra: [[UInt8]], missing: [[UInt8]]) {
        let theirSet = Set(theirs)
        let extra = store.items[lo..<hi].map(\.id).filter { !theirSet.contains($0) }.sorted { $0.lexicographicallyPrecedes($1) }
        let missing = theirs.filter { !store.contains(id: $0) }
        for id in extra { addHave(id) }
        for id in missing { addWant(id) }
        return (extra, missing)
    }

    /// A piece of the reply: a finished range, or an id list still to be cut to what fits.
    private enum Segment {
        case range(ReconciliationRange, end: Int)
        case ids(lo: Int, hi: Int, upper: ReconciliationBound)
    }

    /// The reply to `ranges`: settled ranges coalesce into skips; differing fingerprints are
    /// split; id lists are answered (responder) or learned from (initiator). When the next
    /// piece would pass `limit`, the reply ends with one fingerprint of everything this side
    /// holds from there to infinity, so the next round resumes exactly where this one stopped.
    private mutating func answer(_ ranges: [ReconciliationRange], limit: Int) throws -> [ReconciliationRange] {
        let tailSize = 1 + 1 + 1 + ReconciliationMessage.fingerprintLength
        var out: [ReconciliationRange] = []
        var size = 2 + varintSize(UInt64(parameters.maxRanges))
        var idsOut = 0
        var previousExpiry: UInt64 = 0
        var lower = ReconciliationBound.zero
        var lo = 0
        var pendingSkip = false
        var emittedEnd = 0
        var truncated = false

        func fits(_ bytes: Int, ids: Int = 0) -> Bool {
            size + bytes + tailSize <= limit && out.count + 3 <= parameters.maxRanges && idsOut + ids <= parameters.maxIDs
        }

        for range in ranges {
            let hi = store.lowerBound(range.upper, from: lo)
            var produced: [Segment] = []
            switch range.payload {
            case .skip:
                break
            case .fingerprint(let theirs):
                if store.fingerprint(lo, hi, hash: hash) != theirs { produced = split(lo, hi, range.upper) }
            case .idList(let theirs):
                if role == .initiator {
                    learn(theirs, lo, hi)
                } else {
                    // The difference settles the range for both sides; if it does not fit
                    // here, the range is answered as a differing fingerprint would be.
                    let (extra, missing) = difference(theirs, lo, hi)
                    if extra.isEmpty, missing.isEmpty {
                        pendingSkip = true
                        lower = range.upper
                        lo = hi
                        continue
                    }
                    let piece = ReconciliationRange(upper: range.upper, payload: .difference(extra: extra, missing: missing))
                    let skipSize = pendingSkip ? ReconciliationMessage.encodedSize(
                        ReconciliationRange(upper: lower, payload: .skip), previousExpiry: previousExpiry) : 0
                    if fits(skipSize + ReconciliationMessage.encodedSize(piece, previousExpiry: previousExpiry),
                            ids: extra.count + missing.count) {
                        produced = [.range(piece, end: hi)]
                    } else {
                        produced = split(lo, hi, range.upper)
                    }
                }
            case .difference(let extra, let missing):
                guard role == .initiator else { throw ReconciliationMessage.malformed("difference sent to the responder") }
                // The responder learned the same from our list: nothing to report.
                for id in extra where !store.contains(id: id) { addWant(id, report: false) }
                for id in missing where store.contains(id: id) { addHave(id, report: false) }
            }
            if produced.isEmpty {
                pendingSkip = true
            } else {
                if pendingSkip { produced.insert(.range(ReconciliationRange(upper: lower, payload: .skip), end: lo), at: 0) }
                pieces: for segment in produced {
                    var piece: ReconciliationRange
                    var end: Int
                    switch segment {
                    case .range(let r, let e):
                        piece = r
                        end = e
                    case .ids(let a, let b, let upper):
                        // A cut list ends at a bound that may carry a whole id prefix.
                        let overhead = 10 + 1 + parameters.idLength + 1 + 3
                        let room = max(0, min((limit - size - tailSize - overhead) / parameters.idLength,
                                              parameters.maxIDs - idsOut))
                        end = b
                        var bound = upper
                        if b > a, room == 0 {
                            truncated = true
                            break pieces
                        }
                        if b - a > room {
                            end = a + room
                            bound = ReconciliationBound.between(store.items[end - 1], store.items[end])
                        }
                        let ids = store.items[a..<end].map(\.id).sorted { $0.lexicographicallyPrecedes($1) }
                        piece = ReconciliationRange(upper: bound, payload: .idList(ids))
                        if end < b {
                            // Cut short: emit what fits, then the tail.
                            let s = ReconciliationMessage.encodedSize(piece, previousExpiry: previousExpiry)
                            if fits(s, ids: ids.count) {
                                out.append(piece)
                                size += s
                                idsOut += ids.count
                                emittedEnd = end
                            }
                            truncated = true
                            break pieces
                        }
                    }
                    let s = ReconciliationMessage.encodedSize(piece, previousExpiry: previousExpiry)
                    guard fits(s, ids: piece.idCount) else {
                        truncated = true
                        break
                    }
                    out.append(piece)
                    size += s
                    idsOut += piece.idCount
                    if !piece.upper.isInfinity { previousExpiry = piece.upper.expiry }
                    emittedEnd = end
                }
                if truncated { break }
                pendingSkip = false
            }
            lower = range.upper
            lo = hi
        }
        if truncated {
            out.append(ReconciliationRange(upper: .infinity,
                                           payload: .fingerprint(store.fingerprint(emittedEnd, store.count, hash: hash))))
        } else if pendingSkip, !out.isEmpty {
            out.append(ReconciliationRange(upper: .infinity, payload: .skip))
        }
        return out
    }

    /// items[lo..<hi] as `buckets` fingerprinted sub-ranges ending at `upper`, or as one id
    /// list when there are fewer than `idListThreshold` (never a single fingerprint: two
    /// sides answering each other with the range they were sent would never finish).
    private func split(_ lo: Int, _ hi: Int, _ upper: ReconciliationBound) -> [Segment] {
        let n = hi - lo
        guard n >= max(parameters.idListThreshold, 2) else { return [.ids(lo: lo, hi: hi, upper: upper)] }
        let buckets = min(parameters.buckets, n)
        let per = n / buckets, extra = n % buckets
        var segments: [Segment] = []
        var start = lo
        for i in 0..<buckets {
            let end = start + per + (i < extra ? 1 : 0)
            let bound = end == hi ? upper : ReconciliationBound.between(store.items[end - 1], store.items[end])
            segments.append(.range(ReconciliationRange(upper: bound, payload: .fingerprint(store.fingerprint(start, end, hash: hash))),
                                   end: end))
            start = end
        }
        return segments
    }
}
