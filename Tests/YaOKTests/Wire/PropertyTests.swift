import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Random packets round-trip exactly through encode/decode and through fragmentation in a
/// random order; seeds are fixed so that a failure reproduces.
@Suite struct PropertyTests {
    static func randomPacket(_ rng: inout SeededRandom) throws -> Packet {
        switch Int.random(in: 0..<5, using: &rng) {
        case 0, 1:
            let header = try RoutedHeader(
                type: Bool.random(using: &rng) ? .message : .ack, hopLimit: UInt8.random(in: 0...255, using: &rng),
                messageID: MessageID(high: rng.next(), low: rng.next()),
                createdMs: Int64.random(in: 0...RoutedHeader.maxCreatedMs, using: &rng),
                lifetimeMinutes: UInt16.random(in: 1...UInt16.max, using: &rng), routingTag: RoutingTag(value: rng.next()))
            let length = Int.random(in: 0...(Bool.random(using: &rng) ? 300 : Wire.maxPacketLength - RoutedHeader.length), using: &rng)
            return .routed(header, payload: rng.bytes(length))
        case 2:
            return .handshake(payload: rng.bytes(Int.random(in: 0...500, using: &rng)))
        case 3:
            return .link(counter: rng.next(),
                         ciphertext: rng.bytes(Int.random(in: Packet.minLinkCiphertextLength...600, using: &rng)))
        default:
            let count = UInt16.random(in: 2...UInt16.max, using: &rng)
            return .fragment(try Fragment(group: UInt16.random(in: 0...UInt16.max, using: &rng),
                                          index: UInt16.random(in: 0..<count, using: &rng), count: count,
                                          data: rng.bytes(Int.random(in: 1...300, using: &rng))))
        }
    }

    @Test func randomPacketsRoundTrip() throws {
        var rng = SeededRandom(seed: 0x5eed)
        for _ in 0..<500 {
            let packet = try Self.randomPacket(&rng)
            let bytes = try packet.encode()
            #expect(try Packet.decode(bytes) == packet)
            #expect(try Packet.decode(bytes).encode() == bytes)
            if case .routed(let header, let payload) = packet {
                let (parsed, range) = try RoutedHeader.parse(bytes)
                #expect(parsed == header && Array(bytes[range]) == payload)
            }
        }
    }

    @Test func randomBytesNeverCrashTheDecoder() {
        var rng = SeededRandom(seed: 99)
        for _ in 0..<5000 {
            var bytes = rng.bytes(Int.random(in: 0...80, using: &rng))
            if !bytes.isEmpty, Bool.random(using: &rng) { bytes[0] = 1 }
            if let packet = try? Packet.decode(bytes) {
                #expect((try? packet.encode()) == bytes)  // anything accepted is canonical
            }
        }
    }

    @Test func randomPacketsFragmentAndReassembleInRandomOrder() throws {
        var rng = SeededRandom(seed: 0xf4a9)
        var reassembler = try Reassembler()
        for round in 0..<60 {
            // One link whose MTU changes between rounds: the group counter carries on, as it does
            // within one Fragmenter (a reconnect gets a new Reassembler as well).
            var fragmenter = try Fragmenter(mtu: Int.random(in: 20...300, using: &rng),
                                            firstGroup: UInt16(truncatingIfNeeded: round * 3))
            let packets = try (0..<3).map { _ in
                try Packet.routed(try sampleHeader(), payload: rng.bytes(Int.random(in: 0...4000, using: &rng))).encode()
            }
            var units = try packets.flatMap { try fragmenter.split($0) }
            units.shuffle(using: &rng)
            var out: [[UInt8]] = []
            for unit in units {
                if case .fragment(let f) = try Packet.decode(unit) {
                    if let p = try reassembler.receive(f, nowMs: Int64(round)) { out.append(p) }
                } else {
                    out.append(unit)
                }
            }
            #expect(out.sorted { $0.lexicographicallyPrecedes($1) } == packets.sorted { $0.lexicographicallyPrecedes($1) })
        }
        #expect(reassembler.memoryInUse == 0)
    }
}
