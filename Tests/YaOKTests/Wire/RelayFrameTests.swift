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
            .post(request: 7, mailbox: mailbox, packet: [1, 2, 3]),
            .delete([StoredPacketRef(mailbox: mailbox, messageID: MessageID(high: 1, low: 2))]),
            .ping(request: 0),
            .challenge(nonce: [UInt8](repeating: 3, count: 32)),
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
        #expect(throws: YaOKError.self) { try RelayFrame.decode([0x03, 0, 0, 0, 0] + mailbox.bytes + [1]) }  // request 0
        #expect(throws: YaOKError.self) { try RelayFrame.decode([0x7F]) }                 // unknown type
        #expect(throws: YaOKError.self) { try RelayFrame.decode([]) }
        #expect(throws: YaOKError.self) { try RelayFrame.decode([UInt8](repeating: 0x03, count: RelayFrame.maxLength + 1)) }
        let v2 = [0x01, 2] + [UInt8](repeating: 0, count: 96)
        #expect { try RelayFrame.decode(v2) } throws: { ($0 as? YaOKError)?.code == .unsupportedVersion }
    }

    @Test func errorMessagesAreCutAtACharacterBoundary() {
        let long = String(repeating: "é", count: 150)  // 300 bytes
        let e = RelayErrorFrame(request: 0, code: .malformed, message: long)
        #expect(e.message.utf8.count == 200)
        #expect(e.status == .malformedPacket)
    }
}
