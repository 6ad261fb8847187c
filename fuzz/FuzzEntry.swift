import YaOKSupport
import YaOKWire

// libFuzzer entry over the wire decoders (scripts/fuzz builds it with
// `swiftc -sanitize=fuzzer,address -parse-as-library` against the YaOKSupport and YaOKWire modules;
// a SwiftPM executable target would clash with libFuzzer's own main).
//
// Every input also goes through RelayFrame.decode and the Bluetooth LE codecs (4, below), and
// every input goes through three paths, so one corpus serves all of them:
//  1. Packet.decode and RoutedHeader.parse, with the invariant that anything accepted
//     re-encodes to exactly the input (the decoder is strict and canonical), and that a link
//     packet's associated data (Packet.linkHeader) is exactly its first 12 bytes.
//  2. FrameDecoder fed the input in chunks whose sizes come from the input itself.
//  3. The frames from (2), decoded as link units; fragments go to a Reassembler with a
//     small budget whose bound is checked after every fragment.
//  4. The Bluetooth LE advertisement parser (BLEAdvert, PROTOCOL.md §9.1: what any radio in
//     range can send) and the mgmt packet decoders (Mgmt: what the kernel writes), with the
//     invariants that an accepted advertisement is found in the input exactly as it encodes
//     (version 2, or version 1 for PSM 0x0081), and that every decoded mgmt event re-encodes
//     to a packet that decodes to the same event.
//  5. The carried-packet and purge-record decoders (PROTOCOL.md §10: what any stranger a node
//     carries for can send), with the invariants that anything accepted re-encodes to exactly
//     the input, that a carried packet's authenticated header is its bytes without 2 and 3,
//     and that a purge record's claims are 16 bytes each and strictly ascending.
//  6. Carry reconciliation messages (docs/PROTOCOL.md §11) for 16- and 32-byte
//     ids: anything accepted re-encodes to exactly the input; a responder and an initiator
//     over a small store answer what they accept with a message their own decoder accepts,
//     within the message limit.
//  7. The contact probe and proof bodies of anonymous links (PROTOCOL.md §5.9: what any peer
//     sends once a link is up), with the invariants that an accepted probe is the input, 1024
//     bytes with exactly 4096 bits set, and an accepted proof is the input's 32 bytes.
//  8. The meeting's link payload bodies (PROTOCOL.md §12.2: reconcile, offer, request,
//     carried, taken, purge, refused), the input as the body of each kind and, from its first
//     byte, as kind || body: anything accepted re-encodes to exactly the body.
// A violated invariant calls fatalError, which libFuzzer reports as a crash.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    checkPacketDecoding(bytes[...])
    checkRelayFrame(bytes)
    checkCarried(bytes)
    for frame in deframe(bytes) {
        checkPacketDecoding(frame[...])
        checkRelayFrame(frame)
        checkCarried(frame)
    }
    reassemble(deframe(bytes))
    checkBLEAdvert(bytes[...])
    checkMgmt(bytes[...])
    checkReconciliation(bytes)
    checkContactBodies(bytes[...])
    checkCarryLinkMessages(bytes[...])
    return 0
}

/// A stand-in for the BLAKE2b fingerprint (the fuzz build has no libsodium): any fixed
/// function of the input exercises the same code paths.
private struct FuzzHash: ReconciliationHash {
    func fingerprint(_ input: [UInt8]) -> [UInt8] {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        var out: [UInt8] = []
        for round in 0..<2 {
            for b in input { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            h ^= UInt64(round)
            for k in 0..<8 { out.append(UInt8(truncatingIfNeeded: h >> (8 * UInt64(k)))) }
        }
        return out
    }
}

/// Stores built once: 300 items whose expiries often repeat (so bounds need id prefixes).
private let reconciliationStores: [Int: ReconciliationSet] = {
    var stores: [Int: ReconciliationSet] = [:]
    for idLength in [16, 32] {
        var state: UInt64 = 7
        func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 11 }
        let items = (0..<300).compactMap { _ in
            try? ReconciliationItem(expiry: 1_000 + next() % 20, id: (0..<idLength).map { _ in UInt8(truncatingIfNeeded: next()) },
                                    idLength: idLength)
        }
        stores[idLength] = try? ReconciliationSet(items, idLength: idLength)
    }
    return stores
}()

private func checkReconciliation(_ bytes: [UInt8]) {
    for idLength in [16, 32] {
        guard let p = try? ReconciliationParameters(idLength: idLength, maxMessageBytes: 4096, maxRanges: 64, maxIDs: 128,
                                                    buckets: 8, idListThreshold: 16, encounterBudget: 1 << 20),
              let store = reconciliationStores[idLength] else { fatalError("reconciliation setup") }
        guard let message = try? ReconciliationMessage.decode(bytes, parameters: p) else { continue }
        guard message.encode() == bytes else { fatalError("accepted reconciliation message does not re-encode to its input") }
        for role in [Reconciler.Role.responder, .initiator] {
            guard var side = try? Reconciler(store: store, role: role, parameters: p, hash: FuzzHash()) else {
                fatalError("reconciler init")
            }
            if role == .initiator { _ = try? side.initiate() }
            let reply: [UInt8]
            switch try? side.receive(bytes) {
            case .send(let r)?, .finish(let r)?: reply = r
            default: continue
            }
            guard reply.count <= p.maxMessageBytes, (try? ReconciliationMessage.decode(reply, parameters: p)) != nil else {
                fatalError("a reconciliation reply its own decoder refuses")
            }
        }
    }
}

/// The advertisement: accepted only as the exact structure of version 1 or 2.
private func checkBLEAdvert(_ bytes: ArraySlice<UInt8>) {
    guard let advert = BLEAdvert(parsing: bytes) else { return }
    guard advert.token.count == BLEAdvert.tokenLength, (1...0xff).contains(advert.psm) else {
        fatalError("BLEAdvert accepted a token of \(advert.token.count) bytes or PSM \(advert.psm)")
    }
    guard BLEAdvert(parsing: advert.encoded) == advert else { fatalError("BLEAdvert does not read back its own encoding") }
    let forms = advert.psm == BLEAdvert.version1PSM ? [advert.encoded, advert.encodedVersion1] : [advert.encoded]
    guard forms.contains(where: { contains(bytes, $0) }) else {
        fatalError("BLEAdvert accepted a structure that is not in the input as it encodes")
    }
}

/// The mgmt decoders: events round-trip; replies stay within their input; a Device Found's
/// advertising data goes to the advertisement parser.
private func checkMgmt(_ bytes: ArraySlice<UInt8>) {
    if let event = Mgmt.parse(bytes) {
        guard Mgmt.parse(Mgmt.encode(event)[...]) == event else { fatalError("mgmt event does not round-trip: \(event)") }
        if case .deviceFound(_, _, _, _, let eir) = event {
            guard eir.count <= bytes.count else { fatalError("Device Found's data is longer than the packet") }
            checkBLEAdvert(eir[...])
        }
    }
    let array = Array(bytes)
    if let indexes = Mgmt.parseIndexList(array), 2 + 2 * indexes.count > array.count {
        fatalError("index list longer than its reply")
    }
    if let features = Mgmt.parseAdvertisingFeatures(array), 8 + features.instances.count > array.count {
        fatalError("advertising instances beyond the reply")
    }
    if let info = Mgmt.parseInfo(array), info.address.bytes.count != 6 {
        fatalError("controller address of \(info.address.bytes.count) bytes")
    }
}

private func contains(_ haystack: ArraySlice<UInt8>, _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    var i = haystack.startIndex
    while i + needle.count <= haystack.endIndex {
        if haystack[i..<(i + needle.count)].elementsEqual(needle) { return true }
        i += 1
    }
    return false
}

private func checkPacketDecoding(_ bytes: ArraySlice<UInt8>) {
    let decoded = try? Packet.decode(bytes)
    if let decoded {
        guard let again = try? decoded.encode(), again[...] == bytes else {
            fatalError("accepted packet does not re-encode to its input")
        }
    }
    if case .link(let counter, let ciphertext)? = decoded {
        // The link cipher rebuilds the header it authenticates from the decoded fields; if
        // that differed from the bytes received, a peer could change them unnoticed.
        guard let header = try? Packet.linkHeader(counter: counter, ciphertextLength: ciphertext.count),
              header == Array(bytes.prefix(Packet.linkHeaderLength)) else {
            fatalError("link header rebuilt for the AEAD differs from the bytes received")
        }
    }
    if let (header, range) = try? RoutedHeader.parse(bytes) {
        guard case .routed(let h, let payload)? = decoded, h == header, Array(bytes[range]) == payload else {
            fatalError("RoutedHeader.parse disagrees with Packet.decode")
        }
    }
}

/// Carried packets and purge records (docs/PROTOCOL.md §10): strict and canonical.
private func checkCarried(_ bytes: [UInt8]) {
    if let packet = try? CarriedPacket.decode(bytes) {
        guard packet.encode() == bytes else { fatalError("accepted carried packet does not re-encode to its input") }
        guard packet.authenticatedHeader == Array(bytes[0..<2]) + Array(bytes[4..<CarriedPacket.headerLength]),
              packet.copyBudget >= 1 else {
            fatalError("carried packet's authenticated header is not its bytes without hop limit and budget")
        }
        // The time check on any expiry, at both ends of the clock: no trap, an answer.
        _ = try? packet.checkTime(nowMs: 1_700_000_000_000)
        _ = try? packet.checkTime(nowMs: Int64.max / 2)
        _ = CopyBudget.split(packet.copyBudget)
    }
    if let record = try? PurgeRecord.decode(bytes) {
        guard record.encode() == bytes, (1...PurgeRecord.maxClaims).contains(record.claims.count),
              record.claims.allSatisfy({ $0.count == PurgeRecord.claimLength }),
              zip(record.claims, record.claims.dropFirst()).allSatisfy({ $0.lexicographicallyPrecedes($1) }) else {
            fatalError("accepted purge record is not canonical")
        }
    }
}

/// Relay frames (docs/PROTOCOL.md §8.3) are strict too: anything accepted re-encodes exactly.
private func checkRelayFrame(_ bytes: [UInt8]) {
    guard let frame = try? RelayFrame.decode(bytes) else { return }
    guard frame.encode() == bytes else { fatalError("accepted relay frame does not re-encode to its input") }
}

/// Chunk sizes from the input's own bytes (1...64), so the fuzzer explores the splits.
private func deframe(_ bytes: [UInt8]) -> [[UInt8]] {
    guard var decoder = try? FrameDecoder(maxLength: 4096) else { fatalError("decoder init") }
    var frames: [[UInt8]] = []
    var i = 0
    var k = 0
    while i < bytes.count {
        let n = bytes.isEmpty ? 1 : Int(bytes[k % bytes.count] & 63) + 1
        k += 1
        do {
            frames += try decoder.feed(bytes[i..<min(i + n, bytes.count)])
        } catch {
            break  // a real link disconnects here
        }
        guard decoder.bufferedByteCount <= decoder.maxLength + 1 else { fatalError("deframer over-buffered") }
        i += n
    }
    return frames
}

private func reassemble(_ units: [[UInt8]]) {
    let budget = 8 * 1024
    guard var reassembler = try? Reassembler(budget: budget, timeoutMs: 50) else { fatalError("reassembler init") }
    for (t, unit) in units.enumerated() {
        guard case .fragment(let fragment)? = try? Packet.decode(unit) else { continue }
        if let packet = try? reassembler.receive(fragment, nowMs: Int64(t * 7)) {
            guard packet.count <= Wire.maxPacketLength else { fatalError("reassembled past the packet limit") }
            checkPacketDecoding(packet[...])
        }
        guard reassembler.memoryInUse <= budget, reassembler.memoryInUse >= 0 else {
            fatalError("reassembler exceeded its budget: \(reassembler.memoryInUse)")
        }
    }
}

/// The anonymous link's probe and proof bodies (and, as a link plaintext, after the kind byte).
private func checkContactBodies(_ bytes: ArraySlice<UInt8>) {
    for body in [bytes, bytes.dropFirst()] {
        if let probe = try? ContactProbeBody(decoding: body) {
            guard probe.bytes.count == ContactProbeBody.length, probe.bytes == Array(body),
                  probe.bytes.reduce(0, { $0 + $1.nonzeroBitCount }) == ContactProbeBody.setBits else {
                fatalError("ContactProbeBody accepted a body that is not 1024 bytes of weight 4096")
            }
            _ = probe.containsAll(ContactProbeBody.positions(Array(body.prefix(32))))
        }
        if let proof = try? ContactProofBody(decoding: body) {
            guard proof.mac == Array(body), proof.mac.count == ContactProofBody.length else {
                fatalError("ContactProofBody accepted a body that is not its 32 bytes")
            }
        }
    }
}

private func checkCarryLinkMessages(_ bytes: ArraySlice<UInt8>) {
    var cases: [(CarryLinkMessage.Kind, ArraySlice<UInt8>)] = CarryLinkMessage.Kind.allCases.map { ($0, bytes) }
    if let first = bytes.first, let kind = CarryLinkMessage.Kind(rawValue: first) { cases.append((kind, bytes.dropFirst())) }
    for (kind, body) in cases {
        guard let message = try? CarryLinkMessage.decode(kind: kind, body: body) else { continue }
        guard message.kind == kind, (try? message.encodeBody()) == Array(body) else {
            fatalError("CarryLinkMessage accepted a \(kind) body that does not re-encode to itself")
        }
    }
}
