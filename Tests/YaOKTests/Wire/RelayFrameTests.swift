import Testing
@testable import YaOKSupport
@testable import YaOKWire

@Suite struct RelayFrameTests {
    let mailbox = try! MailboxID(bytes: [UInt8](repeating: 7, count: 32))

    func allFrames() throws -> [RelayFrame] {
        let proof = try MailboxProof(mailbox: mailbox, signature: [UInt8](repeating: 9, count: 64))
        return [
            .auth(pseudonym: [UInt8](repeating: 1, count: 32), signature: [UInt8](repeating: 2, count: 64)),
            .subscribe([proof, proof]),
            .post(request: 7, mailbox: mailbox, signature: [UInt8](repeating: 8, count: 64), packet: [1, 2, 3]),
            .delete([StoredPacketRef(mailbox: mailbox, messageID: MessageID(high: 1, low: 2))]),
            .ping(request: 0),
            .challenge(nonce: [UInt8](repeating: 3, count: 32), relay: [UInt8](repeating: 4, count: 16)),
            .ready(sessionLifetimeSeconds: 3600, ratePerHour: 100, remaining: 99),
            .subscribed(count: 2),
            .accepted(request: 0xFFFF_FFFF),
            .deliver(mailbox: mailbox, packet: [4, 5]),
            .pong(request: 5),
            .error(RelayErrorFrame(request: 3, code: .rateLimited, retryAfterSeconds: 600,
                                   message: "Rate limit reached. Try again in 10 minutes.")),
        ]
    }

    @Test func everyFrameRoundTrips() throws {
        for frame in try allFrames() {
            #expect(try RelayFrame.decode(frame.encode()) == frame)
        }
    }

    @Test func truncatedOrExtendedFramesAreRefused() throws {
        for frame in try allFrames() {
            let bytes = frame.encode()
            // Frames whose last field is "the rest" accept a shorter tail; all others refuse it.
            for cut in 1..<bytes.count {
                if let shorter = try? RelayFrame.decode(Array(bytes.prefix(cut))) {
                    #expect(shorter.encode() == Array(bytes.prefix(cut)))
                }
            }
            if case .post = frame { continue }
            if case .deliver = frame { continue }
            if case .error = frame { continue }
            #expect(throws: YaOKError.self) { try RelayFrame.decode(bytes + [0]) }
        }
    }

    @Test func countsAndSizesAreBounded() throws {
        #expect(throws: YaOKError.self) { try RelayFrame.decode([0x02, 0, 0]) }           // SUBSCRIBE of 0
        #expect(throws: YaOKError.self) { try RelayFrame.decode([0x02, 0, 65]) }          // SUBSCRIBE of 65
        #expect(throws: YaOKError.self) { try RelayFrame.decode([0x04, 0x01, 0x01]) }     // DELETE of 257
        #expect(throws: YaOKError.self) { try RelayFrame.decode([0x03, 0, 0, 0, 0] + mailbox.bytes + [UInt8](repeating: 0, count: 64) + [1]) }  // request 0
        #expect(throws: YaOKError.self) { try RelayFrame.decode([0x03, 0, 0, 0, 1] + mailbox.bytes + [1]) }   // no signature
        #expect(throws: YaOKError.self) { try RelayFrame.decode([0x7F]) }                 // unknown type
        #expect(throws: YaOKError.self) { try RelayFrame.decode([]) }
        #expect(throws: YaOKError.self) { try RelayFrame.decode([UInt8](repeating: 0x03, count: RelayFrame.maxLength + 1)) }
        let v2 = [0x01, 2] + [UInt8](repeating: 0, count: 96)
        #expect { try RelayFrame.decode(v2) } throws: { ($0 as? YaOKError)?.code == .unsupportedVersion }
    }

    /// §8.4: SUBSCRIBE and DELETE sizes do not tell how many contacts a node has or how
    /// many packets it fetched: every SUBSCRIBE has 64 slots, a DELETE 16, 64 or 256.
    @Test func subscribeAndDeleteSizesAreBuckets() throws {
        let proof = try MailboxProof(mailbox: mailbox, signature: [UInt8](repeating: 9, count: 64))
        for n in [1, 2, 17, 63, 64] {
            #expect(RelayFrame.subscribe(Array(repeating: proof, count: n)).encode().count == 3 + 64 * 96)
        }
        let ref = StoredPacketRef(mailbox: mailbox, messageID: MessageID(high: 1, low: 2))
        for (n, size) in [(1, 16), (16, 16), (17, 64), (64, 64), (65, 256), (256, 256)] {
            #expect(RelayFrame.delete(Array(repeating: ref, count: n)).encode().count == 3 + size * 48, "\(n) refs")
        }
    }

    /// Padding is zero and of exactly the bucket's length: one encoding per frame.
    @Test func paddingMustBeZeroAndExact() throws {
        let proof = try MailboxProof(mailbox: mailbox, signature: [UInt8](repeating: 9, count: 64))
        var subscribe = RelayFrame.subscribe([proof]).encode()
        subscribe[subscribe.count - 1] = 1
        #expect(throws: YaOKError.self) { try RelayFrame.decode(subscribe) }
        #expect(throws: YaOKError.self) { try RelayFrame.decode(Array(RelayFrame.subscribe([proof]).encode().prefix(3 + 96))) }
        let ref = StoredPacketRef(mailbox: mailbox, messageID: MessageID(high: 1, low: 2))
        var delete = RelayFrame.delete([ref]).encode()
        delete[delete.count - 1] = 1
        #expect(throws: YaOKError.self) { try RelayFrame.decode(delete) }
        // One ref in a 64-slot frame: not the smallest bucket, so not its encoding.
        let wide = [0x04, 0, 1] + mailbox.bytes + MessageID(high: 1, low: 2).bytes + [UInt8](repeating: 0, count: 63 * 48)
        #expect(throws: YaOKError.self) { try RelayFrame.decode(wide) }
    }

    @Test func errorMessagesAreCutAtACharacterBoundary() {
        let long = String(repeating: "é", count: 150)  // 300 bytes
        let e = RelayErrorFrame(request: 0, code: .malformed, message: long)
        #expect(e.message.utf8.count == 200)
        #expect(e.status == .malformedPacket)
    }
}
