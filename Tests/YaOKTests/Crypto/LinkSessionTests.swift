import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// Link packets over a lossy, hostile link (docs/PROTOCOL.md §5.3, §5.4): lost packets do
/// no harm; replayed, reordered, forged and altered ones are dropped without closing the link.
@Suite struct LinkSessionTests {
    func link() throws -> (sender: LinkSession, receiver: LinkSession) {
        let (i, r) = try completeHandshake(try LinkNode("Alice").handshake(.initiator), try LinkNode("Bob").handshake(.responder))
        return (i.session, r.session)
    }

    /// An authentic link packet with any plaintext, sealed outside LinkSession (whose
    /// encoder refuses payloads a receiver would refuse), to play a buggy or newer peer.
    func rawPacket(_ session: LinkSession, counter: UInt64, plaintext: [UInt8]) throws -> [UInt8] {
        let key = try #require(session.keyCopiesForTesting).send
        let header = try Packet.linkHeader(counter: counter, ciphertextLength: plaintext.count + 16)
        return header + (try key.withUnsafeBytes {
            try Sodium.chacha20Poly1305Encrypt(key: $0, nonce: NoiseSymmetricState.nonce(counter), ad: header, plaintext: plaintext)
        })
    }

    @Test func lostPacketsAreTolerated() throws {
        let (sender, receiver) = try link()
        var rng = SeededRandom(seed: 0x11ce)
        var delivered = 0
        for n in 0..<200 {
            let packet = try sender.seal(.packet([UInt8(n & 0xff), 1]))
            guard Int.random(in: 0..<3, using: &rng) == 0 else { continue }  // two in three lost
            #expect(try receiver.open(packet) == .packet([UInt8(n & 0xff), 1]))
            delivered += 1
        }
        #expect(delivered > 30)
    }

    @Test func replayedAndOldCountersAreRefusedAndTheLinkGoesOn() throws {
        let (sender, receiver) = try link()
        let packets = try (0..<4).map { _ in try sender.seal(.keepalive) }
        #expect(try receiver.open(packets[0]) == .keepalive)
        #expect(try receiver.open(packets[2]) == .keepalive)
        for old in [packets[2], packets[1], packets[0]] {  // a replay, a late one, an older one
            #expect(errorCode { try receiver.open(old) } == .expired)
        }
        #expect(try receiver.open(packets[3]) == .keepalive)
        #expect(try receiver.open(try sender.seal(.packet([9]))) == .packet([9]))
    }

    @Test func tamperedPacketsAreRefusedWithoutSpendingTheCounter() throws {
        let (sender, receiver) = try link()
        let packet = try sender.seal(.packet([1, 2, 3, 4]))
        for position in 0..<packet.count {
            var changed = packet
            changed[position] ^= 0x01
            let code = errorCode { try receiver.open(changed) }
            // Version and type are read first (type 0x05 ^ 0x01 is a fragment, not a link
            // packet); a changed length no longer matches the bytes; anything else
            // (counter, ciphertext, tag) fails the tag.
            switch position {
            case 0: #expect(code == .unsupportedVersion)
            case 1, 2, 3: #expect(code == .malformedPacket)
            default: #expect(code == .tampered, "byte \(position)")
            }
        }
        #expect(try receiver.open(packet) == .packet([1, 2, 3, 4]))
    }

    @Test func packetsOfTheOtherDirectionAreRefused() throws {
        let (sender, receiver) = try link()
        // A reflection attack: the receiver's own packet played back to it.
        #expect(errorCode { try receiver.open(try receiver.seal(.keepalive)) } == .tampered)
        #expect(errorCode { try sender.open(try sender.seal(.keepalive)) } == .tampered)
    }

    @Test func unknownKindsAndBadBodiesDropOnePacketOnly() throws {
        let (sender, receiver) = try link()
        let unknown = try rawPacket(sender, counter: 0, plaintext: [0x7f, 1, 2])
        #expect(errorCode { try receiver.open(unknown) } == .unknownPacketType)
        #expect(errorCode { try receiver.open(unknown) } == .expired)  // authentic: its counter is spent
        let bad: [[UInt8]] = [
            [],                                                // no kind
            [0x01],                                            // empty carried packet
            [0x02, 0],                                         // receipt of nothing
            [0x02, 2] + [UInt8](repeating: 7, count: 16),      // count says 2, holds 1
            [0x02, 1] + [UInt8](repeating: 7, count: 17),      // a byte too many
            [0x03, 0],                                         // keepalive with a body
        ]
        for (n, plaintext) in bad.enumerated() {
            #expect(errorCode { try receiver.open(try rawPacket(sender, counter: UInt64(n + 1), plaintext: plaintext)) }
                    == .malformedPacket, "case \(n)")
        }
        let receipt = try rawPacket(sender, counter: 99, plaintext: [0x02, 1] + [UInt8](0..<16))
        #expect(try receiver.open(receipt) == .receipt([try MessageID(bytes: [UInt8](0..<16))]))
    }

    @Test func theLastCounterIsNeverUsed() throws {
        let (sender, receiver) = try link()
        sender.nextSendCounter = .max - 1
        let last = try sender.seal(.keepalive)
        #expect(try Packet.decode(last) == .link(counter: .max - 1, ciphertext: Array(last[12...])))
        #expect(try receiver.open(last) == .keepalive)
        #expect(errorCode { try sender.seal(.keepalive) } == .closed)
        #expect(sender.isClosed)
        // Nor accepted: a peer that sends it is broken (and the tag would still need to verify).
        #expect(errorCode { try receiver.open(try rawPacket(receiver, counter: .max, plaintext: [0x03])) } == .malformedPacket)
    }

    @Test func closingForgetsTheKeys() throws {
        let (sender, receiver) = try link()
        let packet = try sender.seal(.keepalive)
        receiver.close()
        receiver.close()
        #expect(receiver.isClosed)
        #expect(receiver.keyCopiesForTesting == nil)
        #expect(errorCode { try receiver.open(packet) } == .closed)
        #expect(errorCode { try receiver.seal(.keepalive) } == .closed)
    }

    @Test func payloadLimits() throws {
        let (sender, receiver) = try link()
        let largest = [UInt8](repeating: 1, count: LinkPayload.maxCarriedPacketLength)
        let packet = try sender.seal(.packet(largest))
        #expect(packet.count == Wire.maxPacketLength)
        #expect(try receiver.open(packet) == .packet(largest))
        #expect(errorCode { try sender.seal(.packet(largest + [1])) } == .invalidArgument)
        #expect(errorCode { try sender.seal(.packet([])) } == .invalidArgument)
        #expect(errorCode { try sender.seal(.receipt([])) } == .invalidArgument)
        let ids = (0..<256).map { MessageID(high: 0, low: UInt64($0)) }
        #expect(errorCode { try sender.seal(.receipt(ids)) } == .invalidArgument)
        let full = try sender.seal(.receipt(Array(ids.prefix(255))))
        #expect(full.count == 30 + 16 * 255)
        #expect(try receiver.open(full) == .receipt(Array(ids.prefix(255))))
        #expect(try sender.seal(.keepalive).count == 29)
        // A refused payload spent no counter: the receiver saw no gap it could not explain.
        #expect(sender.nextSendCounter == 3)
    }
}
